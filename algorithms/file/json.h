// A small JSON reader for the schedule files (algorithms/file/schedule_file.h): values as a
// tree, numbers kept as their text so 64-bit offsets stay exact. Errors name the line and
// column. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace braid::algo {

struct JsonMember;

struct JsonValue {
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // a string's value, or a number as written
  std::vector<JsonValue> items;
  std::vector<JsonMember> members;  // an object's keys and values, in the file's order
  int line = 1;  // where the value starts, for messages

  const JsonValue* find(const std::string& key) const;
  bool isInteger() const;
};

// One key of an object and its value. A struct, not a std::pair: a pair of an incomplete
// JsonValue inside JsonValue does not compile with clang's C++20 mode.
struct JsonMember {
  std::string key;
  JsonValue value;
};

Expected<JsonValue> parseJson(const std::string& text);
// A string as a JSON string literal (quotes and escapes added).
std::string jsonQuote(const std::string& s);

}  // namespace braid::algo
