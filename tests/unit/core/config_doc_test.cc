// docs/configuration.md against envTable(): the page's "## Variables" tables must list
// every variable of the table, and no other, each with the table's default and NCCL
// fallback, so neither can change without the other; and the library's sources read no
// BRAID_* variable that the table lacks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/env.h"

namespace braid {
namespace {

struct DocRow {
  std::string defaultCell;  // second column, as written
  std::string nameCell;     // first column, as written
};

std::vector<std::string> cellsOf(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line.substr(1));
  std::string cell;
  while (std::getline(in, cell, '|')) {
    size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  return cells;
}

// Rows of the tables under "## Variables" (up to the next "## " heading), by name.
std::map<std::string, DocRow> documentedVariables() {
  std::ifstream doc(BRAID_CONFIG_DOC);
  EXPECT_TRUE(doc.good()) << "cannot read " << BRAID_CONFIG_DOC;
  std::map<std::string, DocRow> rows;
  bool inSection = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) inSection = line == "## Variables";
    if (!inSection || line.rfind("| `BRAID_", 0) != 0) continue;
    std::vector<std::string> cells = cellsOf(line);
    if (cells.size() < 3) continue;
    std::string name = cells[0].substr(1, cells[0].find('`', 1) - 1);
    EXPECT_EQ(rows.count(name), 0u) << name << " is documented twice";
    rows[name] = DocRow{cells[1], cells[0]};
  }
  return rows;
}

bool inTable(const std::string& name) {
  for (const EnvVar& v : envTable()) {
    if (name == v.name) return true;
  }
  return false;
}

TEST(ConfigDoc, ListsEveryVariableOfTheTableWithItsDefaultAndFallback) {
  std::map<std::string, DocRow> rows = documentedVariables();
  ASSERT_FALSE(rows.empty()) << BRAID_CONFIG_DOC << " has no '## Variables' table rows";
  for (const EnvVar& v : envTable()) {
    auto it = rows.find(v.name);
    if (it == rows.end()) {
      ADD_FAILURE() << v.name << " is in envTable() (src/core/env.cc) but not in "
                    << BRAID_CONFIG_DOC;
      continue;
    }
    // A default in the code is written `value`; no default, any text without backticks.
    if (v.defaultValue != nullptr) {
      EXPECT_EQ(it->second.defaultCell, std::string("`") + v.defaultValue + "`")
          << v.name << ": the page's default differs from envTable()'s";
    } else {
      EXPECT_EQ(it->second.defaultCell.find('`'), std::string::npos)
          << v.name << " has no default in envTable(), but the page gives one in backticks";
    }
    if (v.fallback != nullptr) {
      EXPECT_NE(it->second.nameCell.find(std::string("`") + v.fallback + "`"), std::string::npos)
          << v.name << ": the page does not name its NCCL fallback " << v.fallback;
    } else {
      EXPECT_EQ(it->second.nameCell.find("NCCL_"), std::string::npos)
          << v.name << ": the page names an NCCL fallback that envTable() does not read";
    }
  }
}

TEST(ConfigDoc, DocumentsNoVariableTheTableLacks) {
  for (const auto& [name, row] : documentedVariables()) {
    EXPECT_TRUE(inTable(name)) << name << " is in " << BRAID_CONFIG_DOC
                               << " but not in envTable() (src/core/env.cc)";
  }
}

TEST(ConfigDoc, TheLibraryReadsNoVariableOutsideTheTable) {
  namespace fs = std::filesystem;
  const std::regex read(R"((envInt|envString|getenv)\("(BRAID_[A-Z0-9_]+)\")");
  std::set<std::string> seen;
  for (const char* dir : {"src", "transports", "algorithms"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(BRAID_SOURCE_DIR) / dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cc" && ext != ".h" && ext != ".cu") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string body = text.str();
      for (std::sregex_iterator m(body.begin(), body.end(), read), end; m != end; ++m) {
        seen.insert((*m)[2]);
        EXPECT_TRUE(inTable((*m)[2]))
            << entry.path() << " reads " << (*m)[2] << ", which envTable() (src/core/env.cc) lacks";
      }
    }
  }
  EXPECT_GT(seen.size(), 10u) << "found almost no reads under " << BRAID_SOURCE_DIR;
}

}  // namespace
}  // namespace braid
