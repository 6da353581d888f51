// Batch-norm descriptor grammar, validation and round-trip printing.
#include "kernels/bnorm/desc.h"

#include <cmath>

#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

BnormDesc BnormDesc::parse(const std::string& text) {
  FieldReader r("bnorm descriptor", text);
  for (const char* f : {"mb", "ic", "ih", "iw"}) r.allow_int(f);
  for (const char* f : {"eps", "mom"}) r.allow_number(f);
  for (const char* f : {"inf", "scale", "shift", "relu"}) r.allow_flag(f);
  r.read();
  BnormDesc d;
  for (const char* f : {"mb", "ic"})
    if (!r.has(f)) r.fail(f, "missing in '" + text + "' (example: mb16ic64ih56_scale_shift)");
  d.mb = r.get("mb", 0);
  d.ic = r.get("ic", 0);
  d.ih = r.get("ih", 1);
  d.iw = r.get("iw", d.ih);
  d.eps = r.number("eps", 1e-5);
  d.mom = r.number("mom", 0.1);
  d.inference = r.flag("inf");
  d.scale = r.flag("scale");
  d.shift = r.flag("shift");
  d.relu = r.flag("relu");
  d.name = r.name();
  d.validate();
  return d;
}

void BnormDesc::validate() const {
  auto fail = [](const std::string& f, const std::string& msg) {
    throw InputError("bnorm descriptor field " + f, msg);
  };
  for (auto [f, v] :
       {std::pair<const char*, int64_t>{"mb", mb}, {"ic", ic}, {"ih", ih}, {"iw", iw}}) {
    if (v < 1) fail(f, "must be >= 1, got " + std::to_string(v));
    if (v >= (int64_t(1) << 31)) fail(f, "must be < 2^31, got " + std::to_string(v));
  }
  if (!(eps > 0) || !std::isfinite(eps)) fail("eps", "must be finite and > 0");
  if (!(mom >= 0 && mom <= 1)) fail("mom", "must be in [0, 1]");
  check_fits_in_memory(4.0 * 3 * static_cast<double>(mb) * ic * ih * iw,
                       "bnorm descriptor (mb, ic, ih, iw)");
}

std::string BnormDesc::str() const {
  std::string s = "mb" + std::to_string(mb) + "ic" + std::to_string(ic);
  if (ih != 1 || iw != 1) s += "ih" + std::to_string(ih);
  if (iw != ih) s += "iw" + std::to_string(iw);
  if (eps != 1e-5) s += "_eps" + number_str(eps);
  if (mom != 0.1) s += "_mom" + number_str(mom);
  if (inference) s += "_inf";
  if (scale) s += "_scale";
  if (shift) s += "_shift";
  if (relu) s += "_relu";
  if (!name.empty()) s += "_" + name_token(name);
  return s;
}

bool BnormDesc::operator==(const BnormDesc& o) const {
  return mb == o.mb && ic == o.ic && ih == o.ih && iw == o.iw && inference == o.inference &&
         scale == o.scale && shift == o.shift && relu == o.relu && eps == o.eps && mom == o.mom &&
         name == o.name;
}

double BnormDesc::bytes(Dir dir) const {
  const double n = static_cast<double>(size()), c = static_cast<double>(ic);
  if (dir == Dir::fwd) return 4.0 * (2 * n + (inference ? 4 : 8) * c);
  return 4.0 * (3 * n + 6 * c);
}

}  // namespace pb
