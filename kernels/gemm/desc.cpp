// GEMM descriptor grammar, validation and round-trip printing.
#include "kernels/gemm/desc.h"

#include <limits>

#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

GemmDesc GemmDesc::parse(const std::string& text) {
  FieldReader r("gemm descriptor", text);
  for (const char* f : {"m", "n", "k", "lda", "ldb", "ldc"}) r.allow_int(f);
  for (const char* f : {"alpha", "beta"}) r.allow_number(f);
  for (const char* f : {"nn", "nt", "tn", "tt"}) r.allow_flag(f);
  r.allow_string("dt");
  r.read();
  GemmDesc d;
  if (!r.has("m")) r.fail("m", "missing in '" + text + "' (example: m1760n128k1760_tn)");
  d.m = r.get("m", 0);
  d.n = r.get("n", d.m);  // omitted sizes are square
  d.k = r.get("k", d.m);
  int trans = r.flag("nn") + r.flag("nt") + r.flag("tn") + r.flag("tt");
  if (trans > 1) r.fail("trans", "more than one of _nn/_nt/_tn/_tt in '" + text + "'");
  d.ta = r.flag("tn") || r.flag("tt");
  d.tb = r.flag("nt") || r.flag("tt");
  d.alpha = r.number("alpha", 1);
  d.beta = r.number("beta", 1);
  d.lda = r.get("lda", 0);
  d.ldb = r.get("ldb", 0);
  d.ldc = r.get("ldc", 0);
  d.dt = DataType::parse(r.string("dt", "f32"), "gemm descriptor field dt");
  d.name = r.name();
  d.validate();
  if (d.lda == 0) d.lda = d.min_lda();
  if (d.ldb == 0) d.ldb = d.min_ldb();
  if (d.ldc == 0) d.ldc = d.min_ldc();
  return d;
}

void GemmDesc::validate() const {
  auto fail = [](const std::string& f, const std::string& msg) {
    throw InputError("gemm descriptor field " + f, msg);
  };
  const int64_t kMax = std::numeric_limits<int32_t>::max();  // BLAS takes int sizes
  for (auto [f, v] : {std::pair<const char*, int64_t>{"m", m}, {"n", n}, {"k", k}}) {
    if (v < 1) fail(f, "must be >= 1, got " + std::to_string(v));
    if (v > kMax) fail(f, "must fit in a 32-bit int (BLAS), got " + std::to_string(v));
  }
  auto ld = [&](const char* f, int64_t v, int64_t min) {
    if (v != 0 && v < min)
      fail(f, "must be >= " + std::to_string(min) + " for this shape, got " + std::to_string(v));
    if (v > kMax) fail(f, "must fit in a 32-bit int, got " + std::to_string(v));
  };
  ld("lda", lda, min_lda());
  ld("ldb", ldb, min_ldb());
  ld("ldc", ldc, min_ldc());
  for (auto [f, v] : {std::pair<const char*, double>{"alpha", alpha}, {"beta", beta}})
    if (!(v == v) || v == std::numeric_limits<double>::infinity() ||
        v == -std::numeric_limits<double>::infinity())
      fail(f, "must be finite");
  // Element counts must not overflow, and all three matrices must fit in memory.
  auto count = [&](const char* f, int64_t rows_ld, int64_t cols) {
    if (cols > std::numeric_limits<int64_t>::max() / rows_ld) fail(f, "matrix size overflows");
    return static_cast<double>(rows_ld) * cols;
  };
  double total = count("lda", lda ? lda : min_lda(), a_cols()) +
                 count("ldb", ldb ? ldb : min_ldb(), b_cols()) +
                 count("ldc", ldc ? ldc : min_ldc(), n);
  // fp32 tensors, and the typed copies an implementation of a reduced type converts them into.
  check_fits_in_memory((4.0 + (dt.is_f32() ? 0.0 : dt.in_bytes())) * total,
                       "gemm descriptor (m, n, k)");
}

std::string GemmDesc::str() const {
  std::string s = "m" + std::to_string(m) + "n" + std::to_string(n) + "k" + std::to_string(k);
  // A token after the transpose flag needs a '_' so that the flag's letters end.
  std::string sep;
  if (ta || tb) s += "_" + trans_str(), sep = "_";
  auto add = [&](const std::string& t) { s += sep + t, sep.clear(); };
  if (alpha != 1) add("alpha" + number_str(alpha));
  if (beta != 1) add("beta" + number_str(beta));
  if (lda != min_lda()) add("lda" + std::to_string(lda));
  if (ldb != min_ldb()) add("ldb" + std::to_string(ldb));
  if (ldc != min_ldc()) add("ldc" + std::to_string(ldc));
  if (dt != DataType()) add("dt=" + dt.str()), sep = "_";  // the word ends at '_'
  if (!name.empty()) add(name_token(name));
  return s;
}

bool GemmDesc::operator==(const GemmDesc& o) const {
  return m == o.m && n == o.n && k == o.k && ta == o.ta && tb == o.tb && alpha == o.alpha &&
         beta == o.beta && lda == o.lda && ldb == o.ldb && ldc == o.ldc && dt == o.dt &&
         name == o.name;
}

}  // namespace pb
