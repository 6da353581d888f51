// Data types of a problem (benchdnn's --dt): what the inputs are stored in, what the sum is
// accumulated in, and what the output is written in. Tensors stay fp32 in the interface: an
// input of a reduced type holds values that are exactly representable in that type, and an
// implementation converts them to its storage type in plan() (never timed), as benchdnn hands a
// primitive memory already in its type. Outputs come back as fp32 holding the values of the
// output type.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace pb {

struct DataType {
  // The inputs: f32; bf16 or f16 (fp32 accumulation); u8s8 (u8 source, s8 weights, int32
  // accumulation, a per-tensor scale and zero point for the source, per-output-channel scales
  // for the weights).
  enum In { f32, bf16, f16, u8s8 } in = f32;
  // The output: f32 for every input type; bf16 with bf16, f16 with f16, s8 with u8s8.
  enum Out { out_f32, out_bf16, out_f16, out_s8 } out = out_f32;

  // "f32", "bf16", "bf16:bf16", "f16:f16", "u8s8", "u8s8:s8" (the output after ':', f32 when
  // omitted). Throws InputError(`field`, ...) naming the allowed values.
  static DataType parse(const std::string& text, const std::string& field);
  std::string str() const;      // parse(str()) == *this; "f32" for the default
  std::string in_str() const;   // "f32", "bf16", "f16", "u8s8"
  std::string out_str() const;  // "f32", "bf16", "f16", "s8"
  bool is_f32() const { return in == f32; }
  bool integer() const { return in == u8s8; }
  double in_bytes() const { return in == f32 ? 4 : in == u8s8 ? 1 : 2; }
  double out_bytes() const { return bytes_of(out); }
  static int bytes_of(Out o) { return o == out_f32 ? 4 : o == out_s8 ? 1 : 2; }
  bool operator==(const DataType& o) const { return in == o.in && out == o.out; }
  bool operator!=(const DataType& o) const { return !(*this == o); }
};

// Round to nearest even. bf16: the upper half of an fp32 (NaN kept quiet). f16: IEEE binary16
// with subnormals, overflow to infinity. The bf16 pair is inline and branch-free, so that loops
// over arrays vectorise (a call per element ran a network's bf16 quantise step at a sixth of the
// memory rate, 16 x 256 x 56 x 56 in 7.4 ms against 1.1, 2 threads, Zen 5).
inline uint16_t to_bf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}
inline float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}
// A real value as a u8 source: round(v * inv) + zero (to nearest even, the default rounding),
// saturated to [0, 255]. Min/max and an int32 step, so that loops over arrays vectorise.
inline uint8_t quantise_u8(float v, float inv, float zero) {
  const float q = std::min(std::max(std::nearbyint(v * inv) + zero, 0.0f), 255.0f);
  return static_cast<uint8_t>(static_cast<int32_t>(q));
}
uint16_t to_f16(float v);
float from_f16(uint16_t h);
// The value of v in the output type, as a double: bf16/f16 rounding (from fp32, as an
// implementation does), s8: round to nearest even and saturate to [-128, 127].
double convert_output(double v, DataType::Out out);
// The largest magnitude up to which every integer is exact in the input type (f32: 2^24).
int64_t exact_int_limit(DataType::In in);

}  // namespace pb
