#include "algorithms/file/json.h"

#include <cctype>
#include <cstring>

namespace braid::algo {
namespace {

class Reader {
 public:
  explicit Reader(const std::string& t) : t_(t) {}

  Expected<JsonValue> document() {
    JsonValue v;
    Status st = value(&v, 0);
    if (!st.isOk()) return st;
    skipSpace();
    if (at_ != t_.size()) return fail("text after the JSON value");
    return v;
  }

 private:
  Status fail(const std::string& what) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < at_ && i < t_.size(); ++i) {
      col = t_[i] == '\n' ? 1 : col + 1;
      line += t_[i] == '\n';
    }
    return invalidArgument("JSON line " + std::to_string(line) + " column " + std::to_string(col) +
                           ": " + what);
  }
  void skipSpace() {
    while (at_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[at_]))) {
      line_ += t_[at_] == '\n';
      ++at_;
    }
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (t_.compare(at_, w.size(), w) != 0) return false;
    at_ += w.size();
    return true;
  }

  Status value(JsonValue* v, int depth) {
    if (depth > 64) return fail("nesting deeper than 64");
    skipSpace();
    v->line = line_;
    if (at_ >= t_.size()) return fail("unexpected end of text");
    const char c = t_[at_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v->kind = JsonValue::Kind::kString;
      return string(&v->text);
    }
    if (literal("true") || literal("false")) {
      v->kind = JsonValue::Kind::kBool;
      v->boolean = t_[at_ - 1] == 'e' && t_[at_ - 2] == 'u';  // "true", not "false"
      return Status::ok();
    }
    if (literal("null")) return Status::ok();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      const size_t start = at_;
      ++at_;
      while (at_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[at_])) ||
                                 std::strchr(".eE+-", t_[at_]) != nullptr)) {
        ++at_;
      }
      v->kind = JsonValue::Kind::kNumber;
      v->text = t_.substr(start, at_ - start);
      return Status::ok();
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  Status string(std::string* out) {
    ++at_;  // the opening quote
    while (at_ < t_.size() && t_[at_] != '"') {
      char c = t_[at_++];
      if (c == '\n') return fail("a line break inside a string");
      if (c == '\\') {
        if (at_ >= t_.size()) break;
        const char e = t_[at_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'u':
            if (at_ + 4 > t_.size()) return fail("a short \\u escape");
            for (size_t i = at_; i < at_ + 4; ++i) {
              if (std::isxdigit(static_cast<unsigned char>(t_[i])) == 0) {
                return fail("a \\u escape without four hex digits");
              }
            }
            c = static_cast<char>(std::stoi(t_.substr(at_, 4), nullptr, 16) & 0x7f);
            at_ += 4;
            break;
          default:
            c = e;  // \" \\ \/ and the rest as themselves
        }
      }
      *out += c;
    }
    if (at_ >= t_.size()) return fail("a string without its closing quote");
    ++at_;
    return Status::ok();
  }

  Status array(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kArray;
    ++at_;
    skipSpace();
    if (at_ < t_.size() && t_[at_] == ']') return ++at_, Status::ok();
    while (true) {
      v->items.emplace_back();
      BRAID_TRY(value(&v->items.back(), depth + 1));
      skipSpace();
      if (at_ < t_.size() && t_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < t_.size() && t_[at_] == ']') return ++at_, Status::ok();
      return fail("expected ',' or ']' in an array");
    }
  }

  Status object(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kObject;
    ++at_;
    skipSpace();
    if (at_ < t_.size() && t_[at_] == '}') return ++at_, Status::ok();
    while (true) {
      skipSpace();
      if (at_ >= t_.size() || t_[at_] != '"') return fail("expected a quoted key");
      std::string key;
      BRAID_TRY(string(&key));
      skipSpace();
      if (at_ >= t_.size() || t_[at_] != ':') return fail("expected ':' after \"" + key + "\"");
      ++at_;
      v->members.push_back(JsonMember{key, JsonValue{}});
      BRAID_TRY(value(&v->members.back().value, depth + 1));
      skipSpace();
      if (at_ < t_.size() && t_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < t_.size() && t_[at_] == '}') return ++at_, Status::ok();
      return fail("expected ',' or '}' in an object");
    }
  }

  const std::string& t_;
  size_t at_ = 0;
  int line_ = 1;
};

}  // namespace

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool JsonValue::isInteger() const {
  if (kind != Kind::kNumber || text.empty()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])) && !(i == 0 && text[i] == '-')) {
      return false;
    }
  }
  return text != "-";
}

Expected<JsonValue> parseJson(const std::string& text) { return Reader(text).document(); }

std::string jsonQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace braid::algo
