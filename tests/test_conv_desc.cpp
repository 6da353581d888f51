// Convolution descriptor: round-trips, derived fields, and an InputError naming the field for
// each malformed or inconsistent string.
#include <gtest/gtest.h>

#include <string>

#include "kernels/conv/desc.h"
#include "kernels/core/error.h"

namespace pb {
namespace {

TEST(ConvDescSmoke, DerivesOmittedFields) {
  ConvDesc d = ConvDesc::parse("ic64ih56oc64kh3ph1");
  EXPECT_EQ(d.mb, 2);  // benchdnn's default
  EXPECT_EQ(d.g, 1);
  EXPECT_EQ(d.iw, 56);
  EXPECT_EQ(d.kw, 3);
  EXPECT_EQ(d.pw, 1);
  EXPECT_EQ(d.sh, 1);
  EXPECT_EQ(d.dw, 0);
  EXPECT_EQ(d.oh, 56);
  EXPECT_EQ(d.ow, 56);
  EXPECT_EQ(d.pad_b(), 1);
  EXPECT_EQ(d.pad_r(), 1);
}

TEST(ConvDescSmoke, OutputFormulaWithStrideAndDilation) {
  ConvDesc d = ConvDesc::parse("mb16ic3ih224oc64kh7sh2ph3");
  EXPECT_EQ(d.oh, 112);  // (224 + 6 - 7) / 2 + 1
  EXPECT_EQ(d.pad_b(), 2);
  ConvDesc e = ConvDesc::parse("mb1ic4ih15oc5kh3ph2dh1");  // extent 5
  EXPECT_EQ(e.oh, 15);
  ConvDesc f = ConvDesc::parse("mb1ic16ih10oc8kh1sh2");  // floor leaves one row unused
  EXPECT_EQ(f.oh, 5);
  EXPECT_EQ(f.pad_b(), -1);
  ConvDesc a = ConvDesc::parse("mb16ic3ih227oc96kh11sh4");
  EXPECT_EQ(a.oh, 55);
}

TEST(ConvDescSmoke, FieldsInAnyOrderWithSeparators) {
  ConvDesc a = ConvDesc::parse("mb16ic64ih56oc64kh3ph1n\"x\"");
  ConvDesc b = ConvDesc::parse("kh3_ph1_oc64_ih56_ic64_mb16_n\"x\"");
  EXPECT_EQ(a, b);
  ConvDesc full = ConvDesc::parse(
      "mb16ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0g1n\"resnet50:res2_3x3\"");
  EXPECT_EQ(full.str(), "mb16ic64ih56oc64kh3ph1n\"resnet50:res2_3x3\"");
}

TEST(ConvDescSmoke, RoundTrips) {
  for (const char* s :
       {"mb16ic64ih56oc64kh3ph1n\"resnet50:res2_3x3\"", "mb2g2ic96ih27oc256kh5ph2",
        "mb2ic3ih20iw17oc4kh3kw2ph1pw0dh2dw1", "mb2ic3ih10oc4oh9kh3", "mb2ic8ih12oc8kh1kw7ph0pw3",
        "mb2ic3ih8oc4oh4ow4kh3sh2", "mb1ic3ih9oc2kh3sh1sw2", "mb1ic3ih9oc2kh3dh0dw1",
        "mb2g16ic16ih15oc16kh3ph1", "mb16ic3ih227oc96kh11sh4", "mb2ic3ih5oc4kh3dt=bf16",
        "mb2ic3ih5oc4kh3ph1dh1dt=bf16:bf16n\"x\"", "mb2ic3ih5oc4kh3dt=u8s8",
        "mb2ic3ih5oc4kh3dt=u8s8:s8n\"y\"", "mb2ic3ih5oc4kh3dt=f16:f16"}) {
    ConvDesc d = ConvDesc::parse(s);
    EXPECT_EQ(ConvDesc::parse(d.str()), d) << s << " -> " << d.str();
    EXPECT_EQ(d.str(), s);
  }
}

// dt (desc.h): parsed in any position, printed last before the name, the default not printed;
// bytes count each tensor in its type.
TEST(ConvDescSmoke, DataType) {
  ConvDesc d = ConvDesc::parse("dt=u8s8:s8_mb2ic3ih5oc4kh3");
  EXPECT_EQ(d.dt.in, DataType::u8s8);
  EXPECT_EQ(d.dt.out, DataType::out_s8);
  EXPECT_EQ(d.str(), "mb2ic3ih5oc4kh3dt=u8s8:s8");
  EXPECT_EQ(ConvDesc::parse("mb2ic3ih5oc4kh3dt=f32").str(), "mb2ic3ih5oc4kh3");
  EXPECT_FALSE(ConvDesc::parse("mb2ic3ih5oc4kh3dt=bf16") == ConvDesc::parse("mb2ic3ih5oc4kh3"));
  ConvDesc b = ConvDesc::parse("mb2ic3ih5oc4kh3dt=bf16");
  EXPECT_DOUBLE_EQ(b.bytes(Dir::fwd), 2.0 * (b.src_size() + b.wei_size()) + 4.0 * b.dst_size());
  EXPECT_DOUBLE_EQ(b.bytes(Dir::bwd_d), 2.0 * (b.dst_size() + b.wei_size()) + 4.0 * b.src_size());
  EXPECT_DOUBLE_EQ(b.bytes(Dir::bwd_w), 2.0 * (b.src_size() + b.dst_size()) + 4.0 * b.wei_size());
  EXPECT_DOUBLE_EQ(d.bytes(Dir::fwd), 1.0 * (d.src_size() + d.wei_size() + d.dst_size()));
}

TEST(ConvDescSmoke, AsymmetricPaddingFromOutputSize) {
  ConvDesc d = ConvDesc::parse("mb2ic3ih10oc4oh9kh3");  // top 0, bottom 1
  EXPECT_EQ(d.ph, 0);
  EXPECT_EQ(d.pad_b(), 1);
  EXPECT_EQ(d.ow, 8);  // width still from the formula
}

TEST(ConvDescSmoke, SizesAndFlops) {
  ConvDesc d = ConvDesc::parse("mb2g2ic8ih5oc6kh3");
  EXPECT_EQ(d.src_size(), 2 * 8 * 5 * 5);
  EXPECT_EQ(d.wei_size(), 6 * 4 * 3 * 3);
  EXPECT_EQ(d.dst_size(), 2 * 6 * 3 * 3);
  EXPECT_DOUBLE_EQ(d.flops(), 2.0 * 2 * 6 * 3 * 3 * 4 * 3 * 3);
  EXPECT_DOUBLE_EQ(d.bytes(Dir::fwd), 4.0 * (d.src_size() + d.wei_size() + d.dst_size()));
  EXPECT_EQ(d.wei_dims().size(), 5u);
}

// Each bad string throws an InputError whose field names `field`.
void expect_field(const std::string& text, const std::string& field) {
  try {
    ConvDesc::parse(text);
    ADD_FAILURE() << text << " parsed";
  } catch (const InputError& e) {
    EXPECT_NE(e.field().find(field), std::string::npos)
        << text << ": field '" << e.field() << "', want " << field << " (" << e.what() << ")";
  }
}

TEST(ConvDescSmoke, ErrorsNameTheField) {
  expect_field("mb2ih5oc4kh3", "ic");                     // missing
  expect_field("mb2ic3oc4kh3", "ih");                     // missing
  expect_field("mb2ic3ih5kh3", "oc");                     // missing
  expect_field("mb2ic3ih5oc4", "kh");                     // missing
  expect_field("mb0ic3ih5oc4kh3", "mb");                  // zero
  expect_field("mb2ic0ih5oc4kh3", "ic");                  // zero
  expect_field("mb2ic3ih5oc4kh3ph-1", "ph");              // negative
  expect_field("mb2ic3ih5oc4kh3sh0", "sh");               // zero stride
  expect_field("mb2g2ic3ih5oc4kh3", "ic");                // not divisible by g
  expect_field("mb2g2ic4ih5oc3kh3", "oc");                // not divisible by g
  expect_field("mb2ic3ih5oc4kh7", "kh");                  // kernel larger than input
  expect_field("mb2ic3ih5oc4kh1kw9", "kw");               // likewise for the width
  expect_field("mb2ic3ih5oc4kh3dh2", "kh");               // dilated extent 7 > 5
  expect_field("mb2ic3ih10oc4oh20kh3", "oh");             // output too large for the input
  expect_field("mb2ic3ih10oc4ow3kh3", "ow");              // output too small (pad_r < -sw)
  expect_field("mb2ic3ih10oc4kh3ph3", "ph");              // pad not below the kernel extent
  expect_field("mb2ic3ih5oc4kh3xx1", "xx");               // unknown field
  expect_field("mb2ic3ih5oc4kh3mb4", "mb");               // repeated
  expect_field("mb2ic3ih5oc4kh3sh1.5", "sh");             // not an integer
  expect_field("mb2ic3ih3000000000oc4kh3", "ih");         // beyond 32 bits
  expect_field("mb100000ic100000ih1000oc100000kh1", "");  // does not fit in memory
  expect_field("mb2ic3ih5oc4kh3@", "conv");               // unreadable token
  expect_field("mb2ic3ih5oc4kh3dt=bf8", "field dt");      // unknown type
  expect_field("mb2ic3ih5oc4kh3dt=bf16:s8", "field dt");  // output type of another input
  expect_field("mb2ic3ih5oc4kh3dt=u8s8:", "field dt");    // missing output type
  expect_field("mb2ic3ih5oc4kh3dt=bf16_dt=f32", "dt");    // repeated
  expect_field("mb2ic3ih5oc4kh3dt=bf16mb4", "field dt");  // the word runs to the next _
}

}  // namespace
}  // namespace pb
