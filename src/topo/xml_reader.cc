#include "topo/xml_reader.h"

#include <cctype>
#include <charconv>
#include <cstring>

namespace braid::topo {

namespace {

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

template <typename T>
bool parseNumber(const std::string& s, T* out) {
  T v{};
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  *out = v;
  return true;
}

}  // namespace

const std::string* XmlTag::find(const char* key) const {
  for (const auto& [k, v] : attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool XmlTag::has(const char* key) const { return find(key) != nullptr; }

Status XmlTag::error(const std::string& message) const {
  return invalidArgument(source + ":" + std::to_string(line) + ": <" + name + ">: " + message);
}

Status XmlTag::getString(const char* key, std::string* out) const {
  if (const std::string* v = find(key)) *out = *v;
  return Status::ok();
}

Status XmlTag::getInt(const char* key, int* out) const {
  const std::string* v = find(key);
  if (v && !parseNumber(*v, out)) {
    return error(std::string("attribute '") + key + "' is '" + *v + "'; expected an integer");
  }
  return Status::ok();
}

Status XmlTag::getU64(const char* key, uint64_t* out) const {
  const std::string* v = find(key);
  if (v && !parseNumber(*v, out)) {
    return error(std::string("attribute '") + key + "' is '" + *v +
                 "'; expected a non-negative integer");
  }
  return Status::ok();
}

Status XmlTag::getDouble(const char* key, double* out) const {
  const std::string* v = find(key);
  if (v && !parseNumber(*v, out)) {
    return error(std::string("attribute '") + key + "' is '" + *v + "'; expected a number");
  }
  return Status::ok();
}

Status XmlTag::allowOnly(std::initializer_list<const char*> known) const {
  for (const auto& [k, v] : attrs) {
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) return error("unknown attribute '" + k + "'");
  }
  return Status::ok();
}

Status XmlReader::error(int line, const std::string& message) const {
  return invalidArgument(source_ + ":" + std::to_string(line) + ": " + message);
}

Status XmlReader::skipMisc(bool* more) {
  for (;;) {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      if (text_[pos_++] == '\n') ++line_;
    }
    const char* end = nullptr;
    if (text_.compare(pos_, 2, "<?") == 0) end = "?>";
    if (text_.compare(pos_, 4, "<!--") == 0) end = "-->";
    if (!end) break;
    size_t close = text_.find(end, pos_);
    if (close == std::string::npos) return error(line_, std::string("unterminated; no '") + end + "'");
    for (size_t i = pos_; i < close; ++i) line_ += text_[i] == '\n';
    pos_ = close + std::strlen(end);
  }
  *more = pos_ < text_.size();
  return Status::ok();
}

Status XmlReader::readName(std::string* name, const char* what) {
  size_t start = pos_;
  while (pos_ < text_.size() && isNameChar(text_[pos_])) ++pos_;
  if (pos_ == start) {
    if (pos_ >= text_.size()) return error(line_, std::string("unexpected end of file; expected ") + what);
    return error(line_, std::string("expected ") + what + ", found '" + text_[pos_] + "'");
  }
  *name = text_.substr(start, pos_ - start);
  return Status::ok();
}

Status XmlReader::unescape(const std::string& raw, int line, std::string* out) const {
  static const std::pair<const char*, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  out->clear();
  for (size_t i = 0; i < raw.size();) {
    if (raw[i] != '&') {
      *out += raw[i++];
      continue;
    }
    bool matched = false;
    for (const auto& [entity, c] : kEntities) {
      if (raw.compare(i, std::strlen(entity), entity) == 0) {
        *out += c;
        i += std::strlen(entity);
        matched = true;
        break;
      }
    }
    if (!matched) return error(line, "unknown entity in '" + raw + "'; write '&' as &amp;");
  }
  return Status::ok();
}

Status XmlReader::readAttribute(XmlTag* tag) {
  std::string key;
  BRAID_TRY(readName(&key, "an attribute name"));
  if (pos_ >= text_.size() || text_[pos_] != '=') {
    return error(line_, "attribute '" + key + "' of <" + tag->name + "> has no '=\"value\"'");
  }
  if (++pos_ >= text_.size() || text_[pos_] != '"') {
    return error(line_, "attribute '" + key + "' of <" + tag->name + ">: value must be in \"quotes\"");
  }
  size_t close = text_.find('"', ++pos_);
  if (close == std::string::npos) {
    return error(line_, "attribute '" + key + "' of <" + tag->name + ">: unexpected end of file");
  }
  std::string raw = text_.substr(pos_, close - pos_);
  if (raw.find_first_of("<\n") != std::string::npos) {
    return error(line_, "attribute '" + key + "' of <" + tag->name + ">: missing closing quote");
  }
  std::string value;
  BRAID_TRY(unescape(raw, line_, &value));
  pos_ = close + 1;
  if (tag->has(key.c_str())) return error(line_, "attribute '" + key + "' given twice");
  tag->attrs.emplace_back(key, value);
  return Status::ok();
}

Status XmlReader::next(XmlTag* tag, const char* expecting) {
  bool more = false;
  BRAID_TRY(skipMisc(&more));
  if (!more) return error(line_, std::string("unexpected end of file; expected ") + expecting);
  if (text_[pos_] != '<') return error(line_, std::string("text outside a tag; expected ") + expecting);
  *tag = XmlTag();
  tag->line = line_;
  tag->source = source_;
  tag->closing = text_.compare(++pos_, 1, "/") == 0;
  if (tag->closing) ++pos_;
  BRAID_TRY(readName(&tag->name, "an element name"));
  for (;;) {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      if (text_[pos_++] == '\n') ++line_;
    }
    if (pos_ >= text_.size()) return error(line_, "unexpected end of file inside <" + tag->name + ">");
    if (text_[pos_] == '>') break;
    if (text_.compare(pos_, 2, "/>") == 0 && !tag->closing) {
      tag->selfClosing = true;
      ++pos_;
      break;
    }
    if (tag->closing) return error(line_, "</" + tag->name + "> takes no attributes");
    BRAID_TRY(readAttribute(tag));
  }
  ++pos_;
  return Status::ok();
}

Status XmlReader::expectEnd() {
  bool more = false;
  BRAID_TRY(skipMisc(&more));
  if (more) return error(line_, "content after </braid-topology>");
  return Status::ok();
}

}  // namespace braid::topo
