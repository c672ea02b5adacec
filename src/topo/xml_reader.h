// A tiny reader for the XML subset of topology files: elements with quoted
// attributes, the five standard entities in values, <?...?> and <!-- -->.
// No text content, CDATA or namespaces: a topology file has none. Every error
// names the source, the line and the element or attribute. Not thread-safe;
// one reader per text.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace braid::topo {

// One tag: <name a="v">, <name a="v"/> or </name>.
struct XmlTag {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;
  bool closing = false;      // </name>
  bool selfClosing = false;  // <name .../>
  int line = 0;              // 1-based line of the '<'
  std::string source;        // file name, for messages

  bool has(const char* key) const;
  // Each getter leaves *out untouched when the attribute is absent, so the
  // caller's default stands; a present value must parse completely.
  Status getString(const char* key, std::string* out) const;
  Status getInt(const char* key, int* out) const;
  Status getU64(const char* key, uint64_t* out) const;
  Status getDouble(const char* key, double* out) const;
  // An error for the first attribute not in `known` (a typo would otherwise be
  // read as "absent" and silently take the default).
  Status allowOnly(std::initializer_list<const char*> known) const;
  // "<source>:<line>: <name>: <message>"
  Status error(const std::string& message) const;

 private:
  const std::string* find(const char* key) const;
};

class XmlReader {
 public:
  XmlReader(const std::string& text, std::string source) : text_(text), source_(std::move(source)) {}

  // The next tag; at the end of the text, an error saying `expecting` was
  // expected (a truncated file).
  Status next(XmlTag* tag, const char* expecting);
  // Only whitespace, comments and declarations may follow the root element.
  Status expectEnd();

 private:
  Status error(int line, const std::string& message) const;
  // Skips whitespace, <?...?> and <!--...-->; false at the end of the text.
  Status skipMisc(bool* more);
  Status readName(std::string* name, const char* what);
  Status readAttribute(XmlTag* tag);
  Status unescape(const std::string& raw, int line, std::string* out) const;

  const std::string& text_;
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace braid::topo
