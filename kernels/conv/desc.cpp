// Convolution descriptor: benchdnn grammar (fields in any order, '_' optional), derivation of
// omitted fields, validation naming the field, and round-trip printing.
#include "kernels/conv/desc.h"

#include <limits>
#include <utility>

#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

namespace {

const char* const kWhat = "conv descriptor";

[[noreturn]] void fail(const std::string& field, const std::string& msg) {
  throw InputError(std::string(kWhat) + " field " + field, msg);
}

int64_t extent(int64_t k, int64_t d) {
  return (k - 1) * (d + 1) + 1;
}

// Output size from the formula with symmetric padding; fails naming `kfield` when the kernel
// does not fit in the padded input.
int64_t out_size(int64_t i, int64_t k, int64_t s, int64_t p, int64_t d, const char* kfield) {
  int64_t span = i + 2 * p - extent(k, d);
  if (span < 0)
    fail(kfield, "kernel extent " + std::to_string(extent(k, d)) +
                     " is larger than the padded input " + std::to_string(i + 2 * p));
  return span / s + 1;
}

}  // namespace

ConvDesc ConvDesc::parse(const std::string& text) {
  FieldReader r(kWhat, text);
  const char* fields[] = {"mb", "g",  "ic", "ih", "iw", "oc", "oh", "ow",
                          "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw"};
  for (const char* f : fields) r.allow_int(f);
  r.allow_string("dt");
  // FieldReader marks "not given" with -1, so negative values are rejected here first.
  for (const Token& t : tokenize(text, kWhat))
    if (t.kind == Token::kInt && t.ival < 0)
      fail(t.key, "must be >= 0, got " + std::to_string(t.ival) + " in '" + text + "'");
  r.read();
  const char* example = " (example: mb16ic64ih56oc64kh3ph1)";
  for (auto [a, b] :
       {std::pair<const char*, const char*>{"ic", "ic"}, {"oc", "oc"}, {"ih", "iw"}, {"kh", "kw"}})
    if (!r.has(a) && !r.has(b)) fail(a, "missing in '" + text + "'" + example);
  ConvDesc d;
  d.mb = r.get("mb", 2);  // benchdnn's default batch
  d.g = r.get("g", 1);
  d.ic = r.get("ic", 0);
  d.oc = r.get("oc", 0);
  // A missing height or width takes the other (square images, kernels, strides, pads).
  auto pair = [&](const char* h, const char* w, int64_t dflt, int64_t* hv, int64_t* wv) {
    *hv = r.get(h, r.get(w, dflt));
    *wv = r.get(w, *hv);
  };
  pair("ih", "iw", 0, &d.ih, &d.iw);
  pair("kh", "kw", 0, &d.kh, &d.kw);
  pair("sh", "sw", 1, &d.sh, &d.sw);
  pair("ph", "pw", 0, &d.ph, &d.pw);
  pair("dh", "dw", 0, &d.dh, &d.dw);
  d.dt = DataType::parse(r.string("dt", "f32"), std::string(kWhat) + " field dt");
  d.name = r.name();
  // Sizes that the output formula divides by or subtracts must be sane before deriving.
  for (auto [f, v] : {std::pair<const char*, int64_t>{"ih", d.ih},
                      {"iw", d.iw},
                      {"kh", d.kh},
                      {"kw", d.kw},
                      {"sh", d.sh},
                      {"sw", d.sw}})
    if (v < 1) fail(f, "must be >= 1, got " + std::to_string(v));
  for (auto [f, v] : {std::pair<const char*, int64_t>{"ih", d.ih},
                      {"iw", d.iw},
                      {"kh", d.kh},
                      {"kw", d.kw},
                      {"ph", d.ph},
                      {"pw", d.pw},
                      {"dh", d.dh},
                      {"dw", d.dw}})
    if (v > std::numeric_limits<int32_t>::max()) fail(f, "must fit in a 32-bit int");
  d.oh = r.has("oh") ? r.get("oh", 0) : out_size(d.ih, d.kh, d.sh, d.ph, d.dh, "kh");
  d.ow = r.has("ow") ? r.get("ow", 0) : out_size(d.iw, d.kw, d.sw, d.pw, d.dw, "kw");
  d.validate();
  return d;
}

void ConvDesc::validate() const {
  const int64_t kMax = std::numeric_limits<int32_t>::max();  // oneDNN and BLAS take int sizes
  for (auto [f, v] : {std::pair<const char*, int64_t>{"mb", mb},
                      {"g", g},
                      {"ic", ic},
                      {"oc", oc},
                      {"ih", ih},
                      {"iw", iw},
                      {"oh", oh},
                      {"ow", ow},
                      {"kh", kh},
                      {"kw", kw},
                      {"sh", sh},
                      {"sw", sw}}) {
    if (v < 1) fail(f, "must be >= 1, got " + std::to_string(v));
    if (v > kMax) fail(f, "must fit in a 32-bit int, got " + std::to_string(v));
  }
  for (auto [f, v] :
       {std::pair<const char*, int64_t>{"ph", ph}, {"pw", pw}, {"dh", dh}, {"dw", dw}}) {
    if (v < 0) fail(f, "must be >= 0, got " + std::to_string(v));
    if (v > kMax) fail(f, "must fit in a 32-bit int, got " + std::to_string(v));
  }
  if (ic % g) fail("ic", std::to_string(ic) + " is not divisible by g=" + std::to_string(g));
  if (oc % g) fail("oc", std::to_string(oc) + " is not divisible by g=" + std::to_string(g));
  // Padding: the top/left pad and the bottom/right pad implied by the output size must each be
  // less than the kernel extent (else whole output rows see only padding), and the implied
  // bottom/right pad must be above -stride (else the formula gives a larger output).
  auto dim = [](const char* pf, const char* of, int64_t p, int64_t pad_end, int64_t k, int64_t d,
                int64_t s, int64_t out) {
    const int64_t ext = extent(k, d);
    if (p >= ext)
      fail(pf, std::to_string(p) + " is not below the kernel extent " + std::to_string(ext));
    if (pad_end >= ext || pad_end <= -s)
      fail(of, std::to_string(out) +
                   " contradicts the output-size formula: it implies an end "
                   "padding of " +
                   std::to_string(pad_end) + " (must be in (" + std::to_string(-s) + ", " +
                   std::to_string(ext) + "))");
  };
  dim("ph", "oh", ph, pad_b(), kh, dh, sh, oh);
  dim("pw", "ow", pw, pad_r(), kw, dw, sw, ow);
  // Element counts must not overflow; the three tensors must fit in memory.
  auto count = [](const char* f, std::initializer_list<int64_t> dims) {
    double n = 1;
    for (int64_t v : dims) n *= static_cast<double>(v);
    if (n > 4.0e18) fail(f, "tensor size overflows");
    return n;
  };
  double total = count("mb", {mb, ic, ih, iw}) + count("oc", {oc, ic / g, kh, kw}) +
                 count("mb", {mb, oc, oh, ow});
  // fp32 tensors, and the typed copies an implementation of a reduced type converts them into.
  check_fits_in_memory((4.0 + (dt.is_f32() ? 0.0 : dt.in_bytes())) * total,
                       std::string(kWhat) + " (mb, ic, oc, spatial sizes)");
}

std::string ConvDesc::str() const {
  auto derived = [](int64_t i, int64_t k, int64_t s, int64_t p, int64_t d) {
    int64_t span = i + 2 * p - extent(k, d);
    return span < 0 ? -1 : span / s + 1;
  };
  std::string s = "mb" + std::to_string(mb);
  auto add = [&](const char* f, int64_t v) { s += f + std::to_string(v); };
  if (g != 1) add("g", g);
  add("ic", ic);
  add("ih", ih);
  if (iw != ih) add("iw", iw);
  add("oc", oc);
  if (oh != derived(ih, kh, sh, ph, dh)) add("oh", oh);
  if (ow != derived(iw, kw, sw, pw, dw)) add("ow", ow);
  add("kh", kh);
  if (kw != kh) add("kw", kw);
  // A width field given alone would also set the height, so print the height with it.
  if (sh != 1 || sw != sh) add("sh", sh);
  if (sw != sh) add("sw", sw);
  if (ph != 0 || pw != ph) add("ph", ph);
  if (pw != ph) add("pw", pw);
  if (dh != 0 || dw != dh) add("dh", dh);
  if (dw != dh) add("dw", dw);
  if (dt != DataType()) s += "dt=" + dt.str();  // a quoted name may follow: dt=bf16n"x"
  s += name_token(name);
  return s;
}

bool ConvDesc::operator==(const ConvDesc& o) const {
  return mb == o.mb && g == o.g && ic == o.ic && oc == o.oc && ih == o.ih && iw == o.iw &&
         oh == o.oh && ow == o.ow && kh == o.kh && kw == o.kw && sh == o.sh && sw == o.sw &&
         ph == o.ph && pw == o.pw && dh == o.dh && dw == o.dw && dt == o.dt && name == o.name;
}

double ConvDesc::bytes(Dir dir) const {
  // Every direction reads two of src/wei/dst and writes the third.
  const double src = static_cast<double>(src_size()), wei = static_cast<double>(wei_size()),
               dst = static_cast<double>(dst_size());
  const double out = dir == Dir::bwd_d ? src : dir == Dir::bwd_w ? wei : dst;
  return dt.in_bytes() * (src + wei + dst - out) + dt.out_bytes() * out;
}

}  // namespace pb
