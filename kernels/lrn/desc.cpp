// LRN descriptor grammar, validation and round-trip printing.
#include "kernels/lrn/desc.h"

#include <cmath>

#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

LrnDesc LrnDesc::parse(const std::string& text) {
  FieldReader r("lrn descriptor", text);
  for (const char* f : {"mb", "ic", "ih", "iw", "ls"}) r.allow_int(f);
  for (const char* f : {"alpha", "beta", "k"}) r.allow_number(f);
  r.read();
  LrnDesc d;
  for (const char* f : {"mb", "ic"})
    if (!r.has(f)) r.fail(f, "missing in '" + text + "' (example: mb16ic96ih55ls5_beta0.75_k2)");
  d.mb = r.get("mb", 0);
  d.ic = r.get("ic", 0);
  d.ih = r.get("ih", 1);
  d.iw = r.get("iw", d.ih);
  d.ls = r.get("ls", 5);
  d.alpha = r.number("alpha", 1e-4);
  d.beta = r.number("beta", 0.75);
  d.k = r.number("k", 1);
  d.name = r.name();
  d.validate();
  return d;
}

void LrnDesc::validate() const {
  auto fail = [](const std::string& f, const std::string& msg) {
    throw InputError("lrn descriptor field " + f, msg);
  };
  for (auto [f, v] : {std::pair<const char*, int64_t>{"mb", mb},
                      {"ic", ic},
                      {"ih", ih},
                      {"iw", iw},
                      {"ls", ls}}) {
    if (v < 1) fail(f, "must be >= 1, got " + std::to_string(v));
    if (v >= (int64_t(1) << 31)) fail(f, "must be < 2^31, got " + std::to_string(v));
  }
  if (ls % 2 == 0)
    fail("ls", "the window must be odd (centred on the channel), got " + std::to_string(ls));
  if (!(alpha >= 0) || !std::isfinite(alpha)) fail("alpha", "must be finite and >= 0");
  if (!(beta >= 0) || !std::isfinite(beta)) fail("beta", "must be finite and >= 0");
  // The base k + alpha/ls * sum must stay positive for any input.
  if (!(k > 0) || !std::isfinite(k)) fail("k", "must be finite and > 0");
  check_fits_in_memory(4.0 * 3 * static_cast<double>(mb) * ic * ih * iw,
                       "lrn descriptor (mb, ic, ih, iw)");
}

std::string LrnDesc::str() const {
  std::string s = "mb" + std::to_string(mb) + "ic" + std::to_string(ic);
  if (ih != 1 || iw != 1) s += "ih" + std::to_string(ih);
  if (iw != ih) s += "iw" + std::to_string(iw);
  if (ls != 5) s += "ls" + std::to_string(ls);
  if (alpha != 1e-4) s += "_alpha" + number_str(alpha);
  if (beta != 0.75) s += "_beta" + number_str(beta);
  if (k != 1) s += "_k" + number_str(k);
  if (!name.empty()) s += "_" + name_token(name);
  return s;
}

bool LrnDesc::operator==(const LrnDesc& o) const {
  return mb == o.mb && ic == o.ic && ih == o.ih && iw == o.iw && ls == o.ls && alpha == o.alpha &&
         beta == o.beta && k == o.k && name == o.name;
}

}  // namespace pb
