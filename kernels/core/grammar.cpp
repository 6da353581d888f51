// Tokenizer and field reader for benchdnn-style descriptor strings.
#include "kernels/core/grammar.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kernels/core/error.h"

namespace pb {

namespace {
[[noreturn]] void bad(const std::string& what, const std::string& text, size_t pos,
                      const std::string& why) {
  throw InputError(what, "cannot read '" + text.substr(pos, 12) + "' at position " +
                             std::to_string(pos) + " of '" + text + "': " + why);
}
}  // namespace

std::vector<Token> tokenize(const std::string& text, const std::string& what) {
  std::vector<Token> out;
  size_t i = 0, n = text.size();
  if (n == 0) throw InputError(what, "empty descriptor");
  while (i < n) {
    char c = text[i];
    if (c == '_' || c == ' ') {
      ++i;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c))) bad(what, text, i, "expected a field name");
    Token t;
    t.pos = i;
    while (i < n && std::isalpha(static_cast<unsigned char>(text[i]))) t.key += text[i++];
    if (i < n && text[i] == '=') {  // key=value: a word such as dt=bf16 or dt=u8s8:s8
      const size_t start = ++i;
      while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == ':')) ++i;
      // A quoted name may follow without '_' (dt=bf16n"x"): its key n is not part of the word.
      if (i < n && text[i] == '"' && i > start + 1 && text[i - 1] == 'n') --i;
      if (i == start) bad(what, text, start - 1, "expected a value after '='");
      t.kind = Token::kString;
      t.sval = text.substr(start, i - start);
    } else if (i < n && text[i] == '"') {
      size_t end = text.find('"', i + 1);
      if (end == std::string::npos) bad(what, text, i, "unterminated quoted name");
      t.kind = Token::kString;
      t.sval = text.substr(i + 1, end - i - 1);
      i = end + 1;
    } else if (i < n && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '-' ||
                         text[i] == '+' || text[i] == '.')) {
      size_t start = i;
      if (text[i] == '-' || text[i] == '+') ++i;
      bool dot = false, digits = false;
      while (i < n && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
        if (text[i] == '.') {
          if (dot) bad(what, text, start, "two decimal points");
          dot = true;
        } else {
          digits = true;
        }
        ++i;
      }
      // Optional exponent: e-7, e+3, e10 (only when digits follow, so "e" can still start a key).
      if (i + 1 < n && (text[i] == 'e' || text[i] == 'E') &&
          (std::isdigit(static_cast<unsigned char>(text[i + 1])) ||
           ((text[i + 1] == '-' || text[i + 1] == '+') && i + 2 < n &&
            std::isdigit(static_cast<unsigned char>(text[i + 2]))))) {
        dot = true;
        i += 2;
        while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      }
      if (!digits) bad(what, text, start, "expected digits");
      std::string num = text.substr(start, i - start);
      if (dot) {
        t.kind = Token::kNumber;
        t.dval = std::strtod(num.c_str(), nullptr);
      } else {
        t.kind = Token::kInt;
        errno = 0;
        t.ival = std::strtoll(num.c_str(), nullptr, 10);
        if (errno == ERANGE) bad(what, text, start, "integer out of range");
        t.dval = static_cast<double>(t.ival);
      }
    } else {
      t.kind = Token::kFlag;
    }
    t.text = text.substr(t.pos, i - t.pos);
    out.push_back(std::move(t));
  }
  return out;
}

void FieldReader::read() {
  std::map<std::string, bool> seen;
  for (const Token& t : tokenize(text_, what_)) {
    auto dup = [&](const std::string& k) {
      if (seen[k]) fail(k, "given twice in '" + text_ + "'");
      seen[k] = true;
    };
    if (t.kind == Token::kString && strings_.count(t.key)) {
      dup(t.key);
      strings_[t.key] = t.sval;
    } else if (t.kind == Token::kString) {
      if (t.key != "n") fail(t.key, "only n\"...\" takes a quoted name, got '" + t.text + "'");
      dup("name");
      name_ = t.sval;
    } else if (t.kind == Token::kFlag) {
      auto it = flags_.find(t.key);
      if (it == flags_.end()) {
        std::string known;
        for (auto& f : flags_) known += (known.empty() ? "" : ", ") + f.first;
        fail(t.key, "unknown token '" + t.text + "'" +
                        (known.empty() ? std::string() : " (flags: " + known + ")"));
      }
      dup(t.key);
      it->second = true;
    } else if (ints_.count(t.key)) {
      if (t.kind != Token::kInt) fail(t.key, "expects an integer, got '" + t.text + "'");
      dup(t.key);
      ints_[t.key] = t.ival;
    } else if (numbers_.count(t.key)) {
      dup(t.key);
      numbers_[t.key] = t.dval;
    } else {
      fail(t.key, "unknown field '" + t.text + "'");
    }
  }
}

bool FieldReader::has(const std::string& key) const {
  auto i = ints_.find(key);
  if (i != ints_.end()) return i->second.has_value();
  auto d = numbers_.find(key);
  return d != numbers_.end() && d->second.has_value();
}

int64_t FieldReader::get(const std::string& key, int64_t fallback) const {
  auto i = ints_.find(key);
  return i == ints_.end() ? fallback : i->second.value_or(fallback);
}

double FieldReader::number(const std::string& key, double fallback) const {
  auto d = numbers_.find(key);
  return d == numbers_.end() ? fallback : d->second.value_or(fallback);
}

std::string FieldReader::string(const std::string& key, const std::string& fallback) const {
  auto s = strings_.find(key);
  return s == strings_.end() ? fallback : s->second.value_or(fallback);
}

bool FieldReader::flag(const std::string& flag) const {
  auto f = flags_.find(flag);
  return f != flags_.end() && f->second;
}

void FieldReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(what_ + " field " + key, message);
}

std::string name_token(const std::string& name) {
  return name.empty() ? std::string() : "n\"" + name + "\"";
}

std::string number_str(double v) {
  // -0 prints as 0: "-0" reads back as the integer 0, so it would print differently the second
  // time (tools/fuzz: m1beta-0E-6 -> m1n1k1beta-0 -> m1n1k1beta0). The two compare equal.
  if (v == 0) v = 0.0;
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  // Keep the token a number in our grammar: "1" stays integer-looking only for integers.
  return s;
}

}  // namespace pb
