#include "algorithms/file/xml.h"

#include <cctype>
#include <cstring>

namespace braid::algo {
namespace {

constexpr int kMaxDepth = 32;

class Reader {
 public:
  explicit Reader(const std::string& text) : s_(text) {}

  Expected<XmlElement> document() {
    if (s_.rfind(kUtf8Bom, 0) == 0) i_ = std::strlen(kUtf8Bom);
    BRAID_TRY(skipMisc());
    if (!at("<")) return fail("the file holds no element");
    XmlElement root;
    BRAID_TRY(element(&root, 0));
    BRAID_TRY(skipMisc());
    if (i_ < s_.size()) return fail("text after the root element <" + root.name + ">");
    return root;
  }

 private:
  bool at(const char* lit) const { return s_.compare(i_, std::strlen(lit), lit) == 0; }

  void advance(size_t n) {
    for (size_t k = 0; k < n && i_ < s_.size(); ++k) {
      if (s_[i_++] == '\n') ++line_;
    }
  }

  void skipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) advance(1);
  }

  Status fail(const std::string& what) const {
    return invalidArgument("line " + std::to_string(line_) + ": " + what);
  }

  // Skips past `end`; fails where the file ends first.
  Status skipPast(const char* end, const char* what) {
    const size_t at = s_.find(end, i_);
    if (at == std::string::npos) return fail(std::string("unterminated ") + what);
    advance(at + std::strlen(end) - i_);
    return Status::ok();
  }

  // Whitespace, comments and <?...?> declarations, between elements.
  Status skipMisc() {
    for (;;) {
      skipSpace();
      if (at("<!--")) {
        BRAID_TRY(skipPast("-->", "comment"));
      } else if (at("<?")) {
        BRAID_TRY(skipPast("?>", "declaration"));
      } else if (at("<!")) {
        return fail("DOCTYPE and CDATA sections are not read");
      } else {
        return Status::ok();
      }
    }
  }

  static bool nameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == ':';
  }

  std::string name() {
    const size_t start = i_;
    while (i_ < s_.size() && nameChar(s_[i_])) ++i_;
    return s_.substr(start, i_ - start);
  }

  Expected<std::string> unescape(const std::string& raw) const {
    static const char* const kEntities[][2] = {
        {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}, {"&quot;", "\""}, {"&apos;", "'"}};
    std::string out;
    for (size_t k = 0; k < raw.size();) {
      if (raw[k] != '&') {
        out += raw[k++];
        continue;
      }
      bool known = false;
      for (const auto& e : kEntities) {
        if (raw.compare(k, std::strlen(e[0]), e[0]) == 0) {
          out += e[1];
          k += std::strlen(e[0]);
          known = true;
          break;
        }
      }
      if (!known) return fail("unknown entity in \"" + raw + "\"");
    }
    return out;
  }

  Status attributes(XmlElement* e) {
    for (;;) {
      skipSpace();
      if (i_ >= s_.size()) return fail("unterminated tag <" + e->name + ">");
      if (at("/>") || at(">")) return Status::ok();
      XmlAttr a;
      a.name = name();
      if (a.name.empty()) return fail("a malformed attribute in <" + e->name + ">");
      skipSpace();
      if (!at("=")) return fail("attribute " + a.name + " of <" + e->name + "> has no value");
      advance(1);
      skipSpace();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) {
        return fail("attribute " + a.name + " of <" + e->name + "> must be quoted");
      }
      const char quote = s_[i_];
      const size_t close = s_.find(quote, i_ + 1);
      if (close == std::string::npos) return fail("unterminated value of " + a.name);
      BRAID_ASSIGN_OR_RETURN(a.value, unescape(s_.substr(i_ + 1, close - i_ - 1)));
      advance(close + 1 - i_);
      if (e->attr(a.name) != nullptr) {
        return fail("attribute " + a.name + " given twice in <" + e->name + ">");
      }
      e->attrs.push_back(std::move(a));
    }
  }

  Status element(XmlElement* e, int depth) {
    if (depth > kMaxDepth) return fail("elements nest deeper than 32");
    e->line = line_;
    advance(1);  // '<'
    e->name = name();
    if (e->name.empty()) return fail("a malformed tag");
    BRAID_TRY(attributes(e));
    if (at("/>")) {
      advance(2);
      return Status::ok();
    }
    advance(1);  // '>'
    for (;;) {
      BRAID_TRY(skipMisc());
      if (i_ >= s_.size()) return fail("<" + e->name + "> is never closed");
      if (at("</")) {
        advance(2);
        const std::string closing = name();
        skipSpace();
        if (closing != e->name || !at(">")) {
          return fail("</" + closing + "> closes <" + e->name + "> (line " +
                      std::to_string(e->line) + ")");
        }
        advance(1);
        return Status::ok();
      }
      if (!at("<")) return fail("text inside <" + e->name + ">, where only elements belong");
      e->children.emplace_back();
      BRAID_TRY(element(&e->children.back(), depth + 1));
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  int line_ = 1;
};

}  // namespace

const std::string* XmlElement::attr(const std::string& key) const {
  for (const XmlAttr& a : attrs) {
    if (a.name == key) return &a.value;
  }
  return nullptr;
}

Expected<XmlElement> parseXml(const std::string& text) { return Reader(text).document(); }

}  // namespace braid::algo
