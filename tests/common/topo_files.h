// The topology files shipped in tests/data/topo, found from the test's source
// path or the working directory (ctest runs from build/tests).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>

#include "topo/xml.h"

namespace braid::test {

inline std::string findTopoFile(const char* name) {
  const std::string here = __FILE__;  // .../tests/common/topo_files.h
  const std::string candidates[] = {
      here.substr(0, here.rfind("/common/")) + "/data/topo/" + name,
      std::string("../tests/data/topo/") + name,
      std::string("../../tests/data/topo/") + name,
      std::string("tests/data/topo/") + name,
  };
  for (const std::string& path : candidates) {
    if (std::ifstream(path).good()) return path;
  }
  return "";
}

// The shipped file, or nullopt with the reason (a parse error also fails the test).
inline std::optional<topo::Topology> loadTopoFile(const char* name, std::string* why) {
  const std::string path = findTopoFile(name);
  if (path.empty()) {
    *why = std::string(name) + " not found from " + __FILE__ + " or the working directory";
    return std::nullopt;
  }
  Expected<topo::Topology> t = topo::loadXmlFile(path);
  if (!t.isOk()) {
    ADD_FAILURE() << t.status().message();
    *why = "parse error";
    return std::nullopt;
  }
  return t.value();
}

}  // namespace braid::test
