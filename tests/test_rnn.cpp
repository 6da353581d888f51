// RNN checks beyond the conformance sweep: descriptor grammar and errors, the shrink hook's tags,
// repeated runs giving the same result, and the timing counters the issue asks for.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "kernels/core/error.h"
#include "kernels/core/problem.h"
#include "kernels/gemm/cpu/sgemm.h"
#include "kernels/rnn/rnn.h"

namespace pb {
namespace {

TEST(RnnDescSmoke, ParsesAndRoundTrips) {
  RnnDesc d = RnnDesc::parse("lstm_h1024n64t25");
  EXPECT_EQ(d.cell, Cell::lstm);
  EXPECT_EQ(d.h, 1024);
  EXPECT_EQ(d.n, 64);  // `n` with an integer is the batch ...
  EXPECT_EQ(d.t, 25);
  EXPECT_EQ(d.i, 1024);                                          // input size defaults to H
  RnnDesc e = RnnDesc::parse("gru_h37n1t9i29n\"net:layer 1\"");  // ... and n"..." the name
  EXPECT_EQ(e.cell, Cell::gru);
  EXPECT_EQ(e.n, 1);
  EXPECT_EQ(e.i, 29);
  EXPECT_EQ(e.name, "net:layer 1");
  for (const char* s :
       {"lstm_h1024n64t25", "gru_h37n1t9i29n\"net:layer 1\"", "rnn_h5n2", "lstm_h8n2t3"})
    EXPECT_EQ(RnnDesc::parse(RnnDesc::parse(s).str()), RnnDesc::parse(s)) << s;
  EXPECT_EQ(RnnDesc::parse("rnn_h5n2").t, 1);  // a cell-only descriptor
  EXPECT_EQ(RnnDesc::parse("lstm_h5n2t3i5").str(), "lstm_h5n2t3");
  // Data types (benchdnn's --dt): the word runs to the next '_' or a quoted name.
  for (const char* s : {"lstm_h8n2t3dt=bf16", "gru_h8n2t3i5dt=u8s8_n\"x\"", "rnn_h5n2dt=f16",
                        "lstm_h8n2t3dt=u8s8n\"y\""}) {
    RnnDesc a = RnnDesc::parse(s);
    EXPECT_EQ(RnnDesc::parse(a.str()), a) << s;
    EXPECT_EQ(RnnDesc::parse(a.str()).str(), a.str()) << s;
  }
  EXPECT_EQ(RnnDesc::parse("lstm_h8n2t3dt=u8s8").dt.in, DataType::u8s8);
  EXPECT_EQ(RnnDesc::parse("lstm_h8n2t3dt=f32").str(), "lstm_h8n2t3");
  EXPECT_EQ(RnnDesc::parse("gru_h8n2t3dt=bf16_n\"x\"").str(), "gru_h8n2t3dt=bf16_n\"x\"");
  EXPECT_FALSE(RnnDesc::parse("lstm_h8n2t3dt=bf16") == RnnDesc::parse("lstm_h8n2t3"));
  // Reduced types move fewer bytes: x, h0, W, R and y in the type.
  EXPECT_LT(RnnDesc::parse("lstm_h64n2t3dt=u8s8").bytes(Dir::fwd),
            RnnDesc::parse("lstm_h64n2t3dt=bf16").bytes(Dir::fwd));
  EXPECT_LT(RnnDesc::parse("lstm_h64n2t3dt=bf16").bytes(Dir::fwd),
            RnnDesc::parse("lstm_h64n2t3").bytes(Dir::fwd));
}

TEST(RnnDescSmoke, RejectsBadInputNamingTheField) {
  auto field = [](const char* s) {
    try {
      RnnDesc::parse(s);
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(field("h1024n64t25"), "rnn descriptor field cell");
  EXPECT_EQ(field("lstm_gru_h4n2"), "rnn descriptor field cell");
  EXPECT_EQ(field("lstm_n64t25"), "rnn descriptor field h");
  EXPECT_EQ(field("lstm_h64t25"), "rnn descriptor field n");
  EXPECT_EQ(field("lstm_h0n2"), "rnn descriptor field h");
  EXPECT_EQ(field("lstm_h4n2t0"), "rnn descriptor field t");
  EXPECT_EQ(field("lstm_h4n2x3"), "rnn descriptor field x");
  EXPECT_EQ(field("lstm_h4n2t3t4"), "rnn descriptor field t");
  EXPECT_EQ(field("lstm_h4000000n4000000t100"), "rnn descriptor field t");   // overflow
  EXPECT_EQ(field("lstm_h100000n1000t100"), "rnn descriptor (h, n, t, i)");  // memory
  EXPECT_EQ(field("lstm_h4n2t3dt=bf8"), "rnn descriptor field dt");
  // The output is the hidden state, in the input type: no output type is given.
  EXPECT_EQ(field("lstm_h4n2t3dt=bf16:bf16"), "rnn descriptor field dt");
  EXPECT_EQ(field("lstm_h4n2t3dt=u8s8:s8"), "rnn descriptor field dt");
  EXPECT_EQ(field("lstm_h4n2t3dt=bf16_dt=f32"), "rnn descriptor field dt");  // twice
}

TEST(RnnSmoke, ShrinkSaysWhatItScaled) {
  const PrimitiveInfo& p = find_primitive("rnn");
  std::string tag;
  EXPECT_EQ(p.shrink("lstm_h8n2t3", 3e7, &tag), "lstm_h8n2t3");
  EXPECT_EQ(tag, "");
  std::string s = p.shrink("lstm_h4096n128t25n\"x\"", 3e7, &tag);
  EXPECT_EQ(tag, "scaled_th") << s;
  RnnDesc d = RnnDesc::parse(s);
  EXPECT_LE(3 * d.flops(Dir::fwd), 3e8);
  EXPECT_EQ(d.t, 4);
  EXPECT_EQ(d.h, 64);
  EXPECT_EQ(d.n, 128);
  EXPECT_EQ(d.i, d.h);
  EXPECT_EQ(d.name, "x");
}

// Every implementation, run twice: the same outputs (weight gradients are not accumulated
// across runs, state is reset), and the timing parts are reported.
TEST(RnnSmoke, RepeatedRunsAgreeAndReportParts) {
  const PrimitiveInfo& prim = find_primitive("rnn");
  // (lstm_h19n20t13i7: 260 input-projection columns, past cpu/blas's W packed once.)
  for (const char* text : {"lstm_h19n3t4i7", "gru_h19n3t4", "rnn_h19n3t4", "lstm_h19n20t13i7",
                           "lstm_h19n3t4dt=bf16", "gru_h19n3t4i7dt=u8s8", "lstm_h19n3t4i7dt=u8s8"})
    for (Dir dir : {Dir::fwd, Dir::bwd}) {
      if (dir == Dir::bwd && std::string(text).find("dt=") != std::string::npos) continue;
      auto p = prim.make(text, dir, 3);
      for (const std::string& impl : p->impls()) {
        std::string why;
        auto r = p->runner(impl, &why);
        if (!r) continue;
        Measured m = measure(*p, *r, 0, true, INFINITY);
        EXPECT_TRUE(m.check.pass) << text << " " << impl << " " << m.check.summary();
        std::vector<Tensor> first = r->result();
        r->run();
        r->sync();
        std::vector<Tensor> second = r->result();
        ASSERT_EQ(first.size(), second.size());
        for (size_t o = 0; o < first.size(); ++o)
          for (int64_t i = 0; i < first[o].size(); ++i)
            ASSERT_EQ(first[o][i], second[o][i])
                << text << " " << impl << " output " << o << " [" << i << "]";
        if (impl == "cpu/blas" || impl == "ocl/blas") {
          std::set<std::string> names;
          for (const auto& [k, v] : r->extra_counters()) names.insert(k);
          EXPECT_TRUE(names.count("recurrent_ms")) << impl;
          EXPECT_TRUE(names.count(dir == Dir::fwd ? "input_proj_ms" : "weight_grad_ms")) << impl;
        }
        if (impl == "cpu/blas" && std::string(text).find("dt=") == std::string::npos) {
          const RnnDesc d = RnnDesc::parse(text);
          const bool packed_once = sgemm_library() == "packed" && d.t * d.n <= 256;
          std::map<std::string, double> c;
          for (const auto& [k, v] : r->extra_counters()) c[k] = v;
          ASSERT_TRUE(c.count("w_prepacked"));
          EXPECT_EQ(c["w_prepacked"], packed_once ? 1.0 : 0.0) << text;
        }
      }
    }
}

// cpu/blas's fused step loops run on every thread (up to one per 16 hidden units) once R has
// 16K floats, however small one step's product (a GEMV at batch 1), and on one thread below.
TEST(RnnSmoke, BlasStepLoopsSplitLargeWeights) {
  if (sgemm_library() != "packed" || omp_get_max_threads() < 2)
    GTEST_SKIP() << "the fused loops run with PRIMBENCH_SGEMM=packed on 2 or more threads";
  const PrimitiveInfo& prim = find_primitive("rnn");
  const double all = std::min(omp_get_max_threads(), 4);  // h64: 4 units of 16
  for (const auto& [text, want] : {std::pair{"lstm_h64n1t3", all}, std::pair{"rnn_h32n1t3", 1.0}})
    for (Dir dir : {Dir::fwd, Dir::bwd}) {
      auto p = prim.make(text, dir, 3);
      std::string why;
      auto r = p->runner("cpu/blas", &why);
      ASSERT_TRUE(r) << why;
      Measured m = measure(*p, *r, 0, true, INFINITY);
      EXPECT_TRUE(m.check.pass) << text << " " << m.check.summary();
      std::map<std::string, double> c;
      for (const auto& [k, v] : r->extra_counters()) c[k] = v;
      EXPECT_EQ(c["pw_threads"], want) << text << (dir == Dir::fwd ? " fwd" : " bwd");
    }
}

// cpu/blas keeps R in its own forms (R^T, and with PRIMBENCH_SGEMM=packed both packed for the
// per-step products): new recurrent weights reach the output only through weights(), and then
// exactly as a fresh plan on them; forward and backward, every cell, batches around the packed
// product's column tiles.
TEST(RnnSmoke, BlasTakesNewRecurrentWeightsInWeights) {
  const RegistryEntry<RnnDesc>* blas = nullptr;
  for (const auto& e : rnn_registry())
    if (e.name == "cpu/blas") blas = &e;
  ASSERT_TRUE(blas);
  auto outputs = [](RnnImpl& impl) {
    run_phases(impl);
    std::vector<std::vector<float>> v;
    for (const Tensor& t : impl.result()) v.emplace_back(t.data(), t.data() + t.size());
    return v;
  };
  for (const char* text : {"lstm_h37n9t3i5", "gru_h53n1t3", "rnn_h50n17t2i3"})
    for (Dir dir : {Dir::fwd, Dir::bwd}) {
      SCOPED_TRACE(std::string(text) + (dir == Dir::fwd ? " fwd" : " bwd"));
      const RnnDesc d = RnnDesc::parse(text);
      std::vector<Tensor> in;
      in.emplace_back(Dims{d.t, d.n, d.i});
      in.emplace_back(Dims{d.n, d.h});
      if (d.has_c()) in.emplace_back(Dims{d.n, d.h});
      in.emplace_back(Dims{d.gates(), d.h, d.i});
      in.emplace_back(Dims{d.gates(), d.h, d.h});
      in.emplace_back(Dims{d.bias_gates(), d.h});
      if (dir == Dir::bwd) in.emplace_back(Dims{d.t, d.n, d.h});
      for (size_t k = 0; k < in.size(); ++k)
        for (int64_t j = 0; j < in[k].size(); ++j)
          in[k][j] = 0.1f * static_cast<float>(static_cast<int>((j * 7 + k) % 11) - 5);
      std::vector<const Tensor*> ptrs;
      for (const Tensor& t : in) ptrs.push_back(&t);
      Tensor& r = in[d.has_c() ? 4 : 3];
      auto impl = blas->make();
      plan_phases(*impl, d, dir, ptrs);
      const auto before = outputs(*impl);
      for (int64_t j = 0; j < r.size(); ++j)
        r[j] = -0.5f * r[j] + 0.01f * static_cast<float>(j % 3);
      // (The backward on a system BLAS reads R in place, as reads_inputs_in_place() allows.)
      if (dir == Dir::fwd || sgemm_library() == "packed") {
        EXPECT_EQ(outputs(*impl), before) << "new R used without weights()";
      }
      impl->weights();
      impl->forward_state();
      const auto after = outputs(*impl);
      EXPECT_NE(after, before);
      auto fresh = blas->make();
      plan_phases(*fresh, d, dir, ptrs);
      EXPECT_EQ(after, outputs(*fresh)) << "weights() differs from a plan on the new R";
    }
}

// Reduced types: the forward only, every implementation saying so for bwd; the u8s8 inputs on
// the grid the quantisation parameters describe, with per-row weight scales that differ.
TEST(RnnSmoke, ReducedTypesAreForwardOnlyAndQuantisedExactly) {
  const PrimitiveInfo& prim = find_primitive("rnn");
  auto bwd = prim.make("lstm_h16n2t3dt=bf16", Dir::bwd, 1);
  for (const std::string& impl : bwd->impls()) {
    std::string why;
    EXPECT_EQ(bwd->runner(impl, &why), nullptr) << impl;
    EXPECT_NE(why.find("dt bf16"), std::string::npos) << impl << ": " << why;
  }
  auto p = prim.make("lstm_h16n2t3i5dt=u8s8", Dir::fwd, 1);
  std::map<std::string, const Tensor*> in;
  for (const NamedTensor& t : p->inputs()) in[t.name] = &t.tensor;
  ASSERT_TRUE(in.count("w_scale") && in.count("data_scale") && in.count("data_shift"));
  const float scale = (*in["data_scale"])[0], shift = (*in["data_shift"])[0];
  for (const char* name : {"x", "h0"})
    for (int64_t k = 0; k < in[name]->size(); ++k) {
      const float u = (*in[name])[k] * scale + shift;
      ASSERT_TRUE(u == std::nearbyint(u) && u >= 0 && u <= 255) << name << "[" << k << "]";
    }
  // y is the hidden state, held in the type: bf16 values, or points of the u8 grid, from every
  // implementation that runs the type.
  for (const char* text : {"gru_h37n3t6dt=bf16", "lstm_h37n3t6i9dt=bf16", "lstm_h37n3t6dt=u8s8",
                           "gru_h37n3t6dt=u8s8"}) {
    auto q = prim.make(text, Dir::fwd, 2);
    const bool u8 = std::string(text).find("u8s8") != std::string::npos;
    for (const std::string& impl : q->impls()) {
      std::string why;
      auto r = q->runner(impl, &why);
      if (!r) continue;
      measure(*q, *r, 0, false);
      const std::vector<Tensor> out = r->result();
      const Tensor& y = out[0];
      for (int64_t k = 0; k < y.size(); ++k) {
        const float v = u8 ? y[k] * scale + shift : from_bf16(to_bf16(y[k]));
        ASSERT_EQ(v, u8 ? std::nearbyint(v) : y[k]) << text << " " << impl << " y[" << k << "]";
      }
    }
  }
  const Tensor& ws = *in["w_scale"];
  std::set<float> scales(ws.data(), ws.data() + ws.size());
  EXPECT_EQ(scales.size(), 3u);  // x1, x2, x4 from row to row
  for (const char* name : {"W", "R"}) {
    const Tensor& w = *in[name];
    const int64_t row = w.size() / ws.size();
    for (int64_t k = 0; k < w.size(); ++k) {
      const float q = w[k] * ws[k / row];
      ASSERT_TRUE(q == std::nearbyint(q) && std::fabs(q) <= 127) << name << "[" << k << "]";
    }
  }
}

}  // namespace
}  // namespace pb
