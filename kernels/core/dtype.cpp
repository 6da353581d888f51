// Data-type field grammar and the bf16/f16/s8 conversions the reference and the CPU kernels share.
#include "kernels/core/dtype.h"

#include <cmath>
#include <cstring>

#include "kernels/core/error.h"

namespace pb {

DataType DataType::parse(const std::string& text, const std::string& field) {
  const size_t colon = text.find(':');
  const std::string in = text.substr(0, colon);
  const std::string out = colon == std::string::npos ? "" : text.substr(colon + 1);
  DataType d;
  if (in == "f32")
    d.in = f32;
  else if (in == "bf16")
    d.in = bf16;
  else if (in == "f16")
    d.in = f16;
  else if (in == "u8s8")
    d.in = u8s8;
  else
    throw InputError(field, "unknown data type '" + in + "' in '" + text +
                                "' (have: f32, bf16, f16, u8s8, each optionally :<output type>)");
  if (out.empty() && colon != std::string::npos)
    throw InputError(field, "missing the output type after ':' in '" + text + "'");
  if (out.empty() || out == "f32") {
    d.out = out_f32;
  } else {
    const char* allowed = d.in == bf16 ? "bf16" : d.in == f16 ? "f16" : d.in == u8s8 ? "s8" : "";
    if (out != allowed)
      throw InputError(field, "output type '" + out + "' does not go with " + in + " inputs in '" +
                                  text + "' (have: f32" +
                                  (*allowed ? std::string(", ") + allowed : std::string()) + ")");
    d.out = d.in == bf16 ? out_bf16 : d.in == f16 ? out_f16 : out_s8;
  }
  return d;
}

std::string DataType::in_str() const {
  switch (in) {
    case f32:
      return "f32";
    case bf16:
      return "bf16";
    case f16:
      return "f16";
    case u8s8:
      return "u8s8";
  }
  return "?";
}

std::string DataType::out_str() const {
  switch (out) {
    case out_f32:
      return "f32";
    case out_bf16:
      return "bf16";
    case out_f16:
      return "f16";
    case out_s8:
      return "s8";
  }
  return "?";
}

std::string DataType::str() const {
  return out == out_f32 ? in_str() : in_str() + ":" + out_str();
}

uint16_t to_f16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const float a = std::fabs(v);
  if (std::isnan(v)) return sign | 0x7E00;
  if (a >= 65520.0f) return sign | 0x7C00;            // rounds to infinity (65504 + half an ulp)
  if (a < 6.103515625e-05f) {                         // subnormal: multiples of 2^-24, nearest even
    const float q = std::nearbyint(a * 16777216.0f);  // default rounding mode: to nearest even
    return sign | static_cast<uint16_t>(q);
  }
  int e;
  const float f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  // 11 significant bits: the mantissa m in [1024, 2048), nearest even.
  float m = std::nearbyint(std::ldexp(f, 11));
  if (m == 2048.0f) m = 1024.0f, ++e;
  const int exp16 = e - 1 + 15;
  return sign | static_cast<uint16_t>((exp16 << 10) | (static_cast<int>(m) - 1024));
}

float from_f16(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  float v;
  if (e == 0)
    v = std::ldexp(static_cast<float>(m), -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(m + 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

double convert_output(double v, DataType::Out out) {
  switch (out) {
    case DataType::out_f32:
      return static_cast<float>(v);
    case DataType::out_bf16:
      return from_bf16(to_bf16(static_cast<float>(v)));
    case DataType::out_f16:
      return from_f16(to_f16(static_cast<float>(v)));
    case DataType::out_s8: {
      const double r = std::nearbyint(v);  // to nearest even
      return r < -128 ? -128 : r > 127 ? 127 : r;
    }
  }
  return v;
}

int64_t exact_int_limit(DataType::In in) {
  switch (in) {
    case DataType::f32:
      return int64_t{1} << 24;
    case DataType::bf16:
      return 256;
    case DataType::f16:
      return 2048;
    case DataType::u8s8:
      return 127;
  }
  return 0;
}

}  // namespace pb
