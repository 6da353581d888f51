// Pooling descriptor grammar, derived fields, validation and round-trip printing.
#include "kernels/pool/desc.h"

#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

namespace {
constexpr int64_t kMaxSize = int64_t(1) << 31;  // every size and pad stays below
}  // namespace

std::string pool_alg_str(PoolAlg a) {
  switch (a) {
    case PoolAlg::max:
      return "max";
    case PoolAlg::avg_p:
      return "avgp";
    case PoolAlg::avg_np:
      return "avgnp";
  }
  return "?";
}

PoolDesc PoolDesc::parse(const std::string& text) {
  FieldReader r("pool descriptor", text);
  for (const char* f : {"mb", "ic", "ih", "iw", "oh", "ow", "kh", "kw", "sh", "sw", "ph", "pw"})
    r.allow_int(f);
  for (const char* f : {"max", "avgp", "avgnp"}) r.allow_flag(f);
  r.read();
  PoolDesc d;
  for (const char* f : {"mb", "ic", "ih", "kh"})
    if (!r.has(f)) r.fail(f, "missing in '" + text + "' (example: mb16ic64ih112oh56kh3sh2ph1_max)");
  if (r.flag("max") + r.flag("avgp") + r.flag("avgnp") > 1)
    r.fail("alg", "more than one of _max/_avgp/_avgnp in '" + text + "'");
  d.alg = r.flag("avgp") ? PoolAlg::avg_p : r.flag("avgnp") ? PoolAlg::avg_np : PoolAlg::max;
  d.mb = r.get("mb", 0);
  d.ic = r.get("ic", 0);
  d.ih = r.get("ih", 0);
  d.iw = r.get("iw", d.ih);
  d.kh = r.get("kh", 0);
  d.kw = r.get("kw", d.kh);
  d.sh = r.get("sh", 1);
  d.sw = r.get("sw", d.sh);
  d.ph = r.get("ph", 0);
  d.pw = r.get("pw", d.ph);
  // Derived output sizes; a value <= 0 is reported by validate() under oh/ow, and so is a field
  // past 2^31, from which nothing is derived (fuzz_pool: 2 * pw overflowed at pw = 2^63 - 1).
  auto derive = [](int64_t i, int64_t k, int64_t s, int64_t p) -> int64_t {
    for (int64_t v : {i, k, s, p})
      if (v <= -kMaxSize || v >= kMaxSize) return 0;
    return s > 0 ? (i + 2 * p - k) / s + 1 : 0;
  };
  d.oh = r.get("oh", derive(d.ih, d.kh, d.sh, d.ph));
  d.ow = r.get("ow", derive(d.iw, d.kw, d.sw, d.pw));
  d.name = r.name();
  d.validate();
  return d;
}

void PoolDesc::validate() const {
  auto fail = [](const std::string& f, const std::string& msg) {
    throw InputError("pool descriptor field " + f, msg);
  };
  // Pads first: parse() derived no output size from one out of bounds.
  for (auto [f, v] : {std::pair<const char*, int64_t>{"ph", ph}, {"pw", pw}}) {
    if (v < 0) fail(f, "padding must be >= 0");
    if (v >= kMaxSize) fail(f, "must be < 2^31, got " + std::to_string(v));
  }
  for (auto [f, v] : {std::pair<const char*, int64_t>{"mb", mb},
                      {"ic", ic},
                      {"ih", ih},
                      {"iw", iw},
                      {"kh", kh},
                      {"kw", kw},
                      {"sh", sh},
                      {"sw", sw},
                      {"oh", oh},
                      {"ow", ow}}) {
    if (v < 1) fail(f, "must be >= 1, got " + std::to_string(v));
    if (v >= kMaxSize) fail(f, "must be < 2^31, got " + std::to_string(v));
  }
  if (ph >= kh || pw >= kw) fail(ph >= kh ? "ph" : "pw", "padding must be smaller than the kernel");
  // Every window must hold at least one image element (else max and avgnp are undefined).
  if (pad_b() >= kh) fail("oh", "output rows beyond the image: pad_b = " + std::to_string(pad_b()));
  if (pad_r() >= kw)
    fail("ow", "output columns beyond the image: pad_r = " + std::to_string(pad_r()));
  double elems = static_cast<double>(mb) * ic * (static_cast<double>(ih) * iw + oh * ow);
  check_fits_in_memory(4.0 * 2 * elems, "pool descriptor (mb, ic, ih, iw)");
}

std::string PoolDesc::str() const {
  std::string s = "mb" + std::to_string(mb) + "ic" + std::to_string(ic) + "ih" + std::to_string(ih);
  if (iw != ih) s += "iw" + std::to_string(iw);
  const int64_t doh = (ih + 2 * ph - kh) / sh + 1, dow = (iw + 2 * pw - kw) / sw + 1;
  if (oh != doh) s += "oh" + std::to_string(oh);
  if (ow != dow) s += "ow" + std::to_string(ow);
  s += "kh" + std::to_string(kh);
  if (kw != kh) s += "kw" + std::to_string(kw);
  if (sh != 1) s += "sh" + std::to_string(sh);
  if (sw != sh) s += "sw" + std::to_string(sw);
  if (ph != 0) s += "ph" + std::to_string(ph);
  if (pw != ph) s += "pw" + std::to_string(pw);
  s += "_" + pool_alg_str(alg);
  if (!name.empty()) s += "_" + name_token(name);
  return s;
}

bool PoolDesc::operator==(const PoolDesc& o) const {
  return mb == o.mb && ic == o.ic && ih == o.ih && iw == o.iw && oh == o.oh && ow == o.ow &&
         kh == o.kh && kw == o.kw && sh == o.sh && sw == o.sw && ph == o.ph && pw == o.pw &&
         alg == o.alg && name == o.name;
}

double PoolDesc::bytes(Dir dir) const {
  const double s = static_cast<double>(src_size()), d = static_cast<double>(dst_size());
  if (dir == Dir::fwd) return 4.0 * (s + d);
  return 4.0 * (s + d) + (alg == PoolAlg::max ? ws_elem_bytes() * d : 0.0);
}

}  // namespace pb
