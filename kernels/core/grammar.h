// Descriptor-grammar helpers: benchdnn-style "key<value>" tokens, quoted names, flags.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb {

// One token of a descriptor: `mb16` (key "mb", integer), `a0.5` (number), `n"resnet:c1"` or
// `dt=bf16` (string: quoted, or a word of letters, digits and ':' after '='), or a bare word such
// as `_tn` / `max` (flag). `_` separates tokens and is optional.
struct Token {
  enum Kind { kInt, kNumber, kString, kFlag } kind;
  std::string key;
  int64_t ival = 0;
  double dval = 0;
  std::string sval;
  size_t pos = 0;    // offset in the descriptor text
  std::string text;  // the token as written
};

// Splits `text` into tokens; throws InputError naming the token it could not read.
// `what` is the primitive name used in messages ("gemm descriptor").
std::vector<Token> tokenize(const std::string& text, const std::string& what);

// Reads a token list into named integer fields, rejecting unknown and repeated keys.
// Typical use: for (auto& t : tokenize(...)) fields.take(t) || flags.push_back(t).
class FieldReader {
 public:
  FieldReader(std::string what, std::string text)
      : what_(std::move(what)), text_(std::move(text)) {}
  // Declares an integer field (read() fills it; has() says whether it was given).
  void allow_int(const std::string& key) { ints_[key] = std::nullopt; }
  void allow_number(const std::string& key) { numbers_[key] = std::nullopt; }
  void allow_flag(const std::string& flag) { flags_[flag] = false; }
  // A word-valued field written key=value (dt=bf16).
  void allow_string(const std::string& key) { strings_[key] = std::nullopt; }
  // Consumes every token; the name is the `n"..."` string.
  void read();
  bool has(const std::string& key) const;
  int64_t get(const std::string& key, int64_t fallback) const;
  double number(const std::string& key, double fallback) const;
  bool flag(const std::string& flag) const;
  std::string string(const std::string& key, const std::string& fallback) const;
  const std::string& name() const { return name_; }
  // Throws InputError("<what> field <key>", message): for validate() checks.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  std::string what_, text_, name_;
  std::map<std::string, std::optional<int64_t>> ints_;
  std::map<std::string, std::optional<double>> numbers_;
  std::map<std::string, bool> flags_;
  std::map<std::string, std::optional<std::string>> strings_;
};

// `n"name"` when the name is non-empty, else "".
std::string name_token(const std::string& name);
// Shortest text that reads back to the same double ("1", "0.5", "1e-07").
std::string number_str(double v);

}  // namespace pb
