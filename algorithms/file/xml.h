// A small XML reader for MSCCL's algorithm files (algorithms/file/msccl_xml.h): elements,
// their attributes and children, as a tree. It reads what those files hold and no more: a
// byte order mark, the declaration (<?xml ...?>), comments, elements with quoted
// attributes, empty-element tags, whitespace between elements, and the five predefined
// entities in attribute values. Text content, CDATA and DOCTYPE are refused. Errors name the line.
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace braid::algo {

// A UTF-8 byte order mark, which a file may start with.
constexpr const char* kUtf8Bom = "\xEF\xBB\xBF";

struct XmlAttr {
  std::string name;
  std::string value;
};

struct XmlElement {
  std::string name;
  std::vector<XmlAttr> attrs;  // in the file's order
  std::vector<XmlElement> children;
  int line = 1;  // where the start tag is, for messages

  const std::string* attr(const std::string& key) const;
};

// The document's one root element.
Expected<XmlElement> parseXml(const std::string& text);

}  // namespace braid::algo
