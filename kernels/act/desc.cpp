// Activation descriptor grammar, validation and round-trip printing.
#include "kernels/act/desc.h"

#include <cmath>

#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

std::string act_func_str(ActFunc f) {
  switch (f) {
    case ActFunc::relu:
      return "relu";
    case ActFunc::sigmoid:
      return "sigmoid";
    case ActFunc::tanh:
      return "tanh";
    case ActFunc::softmax:
      return "softmax";
    case ActFunc::xent:
      return "xent";
  }
  return "?";
}

ActDesc ActDesc::parse(const std::string& text) {
  FieldReader r("act descriptor", text);
  for (const char* f : {"mb", "ic", "ih", "iw"}) r.allow_int(f);
  const ActFunc all[] = {ActFunc::relu, ActFunc::sigmoid, ActFunc::tanh, ActFunc::softmax,
                         ActFunc::xent};
  for (ActFunc f : all) r.allow_flag(act_func_str(f));
  r.read();
  ActDesc d;
  int given = 0;
  for (ActFunc f : all)
    if (r.flag(act_func_str(f))) d.func = f, ++given;
  if (given != 1)
    r.fail("func", std::string(given ? "more than one" : "no") +
                       " function (relu, sigmoid, tanh, softmax, xent) in '" + text +
                       "' (example: relu_mb16ic64ih56)");
  for (const char* f : {"mb", "ic"})
    if (!r.has(f)) r.fail(f, "missing in '" + text + "' (example: relu_mb16ic64ih56)");
  d.mb = r.get("mb", 0);
  d.ic = r.get("ic", 0);
  d.ih = r.get("ih", 1);
  d.iw = r.get("iw", d.ih);
  d.name = r.name();
  d.validate();
  return d;
}

void ActDesc::validate() const {
  for (auto [f, v] :
       {std::pair<const char*, int64_t>{"mb", mb}, {"ic", ic}, {"ih", ih}, {"iw", iw}}) {
    if (v < 1)
      throw InputError(std::string("act descriptor field ") + f,
                       "must be >= 1, got " + std::to_string(v));
    if (v >= (int64_t(1) << 31))
      throw InputError(std::string("act descriptor field ") + f,
                       "must be < 2^31, got " + std::to_string(v));
  }
  check_fits_in_memory(4.0 * 3 * static_cast<double>(mb) * ic * ih * iw,
                       "act descriptor (mb, ic, ih, iw)");
}

std::string ActDesc::str() const {
  std::string s = act_func_str(func) + "_mb" + std::to_string(mb) + "ic" + std::to_string(ic);
  if (ih != 1 || iw != 1) s += "ih" + std::to_string(ih);
  if (iw != ih) s += "iw" + std::to_string(iw);
  return s + name_token(name);
}

bool ActDesc::operator==(const ActDesc& o) const {
  return func == o.func && mb == o.mb && ic == o.ic && ih == o.ih && iw == o.iw && name == o.name;
}

double ActDesc::bytes(Dir dir) const {
  const double n = static_cast<double>(size()), p = static_cast<double>(positions());
  if (func == ActFunc::xent) return dir == Dir::fwd ? 4.0 * (2 * n + 2 * p) : 4.0 * (2 * n + p);
  return dir == Dir::fwd ? 8.0 * n : 12.0 * n;
}

void check_labels(const ActDesc& d, const float* labels) {
  for (int64_t p = 0; p < d.positions(); ++p) {
    const float v = labels[p];
    if (!(v >= 0.0f && v < static_cast<float>(d.ic) && v == std::floor(v)))
      throw InputError("labels", "label " + std::to_string(v) + " at position " +
                                     std::to_string(p) + " is not a class index in [0, " +
                                     std::to_string(d.ic) + ")");
  }
}

}  // namespace pb
