// ocl/clblast's tuning (kernels/gemm/opencl/clblast_tuning.h): the parameter file round-trips
// (written, read back, applied), a truncated, corrupt, foreign or unusable file is never loaded
// (it is tuned again), a failing tuner is an error naming it, and ocl/clblast and
// ocl/clblast_default each run their own parameters even when interleaved. OpenCL cases skip
// without a device.
#ifdef PRIMBENCH_HAVE_OPENCL
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_map>

#include "kernels/availability.h"
#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/core/io.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/opencl/clblast_tuning.h"
#include "kernels/opencl/runtime.h"

namespace pb {
namespace {

namespace ct = clblast_tuning;

// Tests tune with the "quick" budget (a few configurations per kernel) unless the environment asks
// for another: ocl/clblast in the conformance sweep only needs valid tuned parameters.
class QuickTuning : public ::testing::Environment {
 public:
  void SetUp() override { setenv("PRIMBENCH_CLBLAST_TUNE", "quick", 0); }
};
const auto* const kQuickTuning = ::testing::AddGlobalTestEnvironment(new QuickTuning);

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// A fresh folder under the system temp folder, removed at the end of the scope.
struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("pb_clblast_tune_" + std::to_string(::getpid()));
  TempDir() {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const char* name) const { return (path / name).string(); }
};

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A complete tuning with made-up (well-formed) values, Xgemm a fallback.
ct::Tuning sample_tuning() {
  ct::Tuning t;
  size_t v = 1;
  for (const auto& [kernel, names] : ct::kernel_parameters())
    for (const auto& name : names) t.params[kernel][name] = v++ % 4 + 1;
  t.params["Xgemm"]["GEMMK"] = 0;
  t.fallbacks["Xgemm"] =
      "clblast::TuneXgemm<float>(size 256, fraction 0.0005) chose unusable parameters: ...";
  return t;
}

// CLBlast 1.5's tuner picks these (GEMMK=1, MWG 128 != NWG 16), which its GEMM gets wrong; the
// second is one of the same sample it runs right.
const std::map<std::string, size_t> kXgemmBroken = {
    {"GEMMK", 1}, {"KREG", 2},  {"KWG", 1},   {"KWI", 1},  {"MDIMA", 16}, {"MDIMC", 16},
    {"MWG", 128}, {"NDIMB", 4}, {"NDIMC", 4}, {"NWG", 16}, {"SA", 0},     {"SB", 0},
    {"STRM", 0},  {"STRN", 0},  {"VWM", 8},   {"VWN", 1}};
const std::map<std::string, size_t> kXgemmGood = {
    {"GEMMK", 1}, {"KREG", 2},  {"KWG", 1},   {"KWI", 1},  {"MDIMA", 2}, {"MDIMC", 2},
    {"MWG", 32},  {"NDIMB", 4}, {"NDIMC", 4}, {"NWG", 32}, {"SA", 0},    {"SB", 0},
    {"STRM", 0},  {"STRN", 0},  {"VWM", 4},   {"VWN", 1}};

bool clblast_has_bug_543() {
  int major = 0, minor = 0, patch = 0;
  std::sscanf(ct::clblast_version().c_str(), "%d.%d.%d", &major, &minor, &patch);
  return major * 10000 + minor * 100 + patch < 10603;
}

std::vector<std::string> all_kernels() {
  std::vector<std::string> k;
  for (const auto& [kernel, names] : ct::kernel_parameters()) k.push_back(kernel);
  return k;
}

std::map<std::string, size_t> current(const std::string& kernel) {
  std::unordered_map<std::string, size_t> p;
  EXPECT_EQ(clblast::RetrieveParameters(ocl::device(), kernel, clblast::Precision::kSingle, p),
            clblast::StatusCode::kSuccess);
  return {p.begin(), p.end()};
}

#define SKIP_WITHOUT_OPENCL() \
  if (std::string why = opencl_unavailable(); !why.empty()) GTEST_SKIP() << why

TEST(ClblastTuneSmoke, TextRoundTrips) {
  const ct::Tuning p = sample_tuning();
  const std::string text = ct::to_text("device=X;driver=1;clblast=1.5.3;budget=b", p, 1234.5);
  ct::Tuning back;
  std::string why;
  ASSERT_TRUE(
      ct::from_text(text, "device=X;driver=1;clblast=1.5.3;budget=b", all_kernels(), &back, &why))
      << why << "\n"
      << text;
  EXPECT_EQ(back, p);
  // Another device, driver, CLBlast version or budget: not loaded.
  for (const char* other :
       {"device=Y;driver=1;clblast=1.5.3;budget=b", "device=X;driver=2;clblast=1.5.3;budget=b",
        "device=X;driver=1;clblast=1.6.0;budget=b", "device=X;driver=1;clblast=1.5.3;budget=c"}) {
    EXPECT_FALSE(ct::from_text(text, other, all_kernels(), &back, &why)) << other;
    EXPECT_NE(why.find("another"), std::string::npos) << why;
  }
}

TEST(ClblastTuneSmoke, TruncatedOrCorruptTextIsRejected) {
  const std::string key = "device=X;driver=1;clblast=1.5.3;budget=b";
  const std::string text = ct::to_text(key, sample_tuning(), 10);
  ct::Tuning p;
  std::string why;
  // Every truncation, at any byte, short of the whole file.
  for (size_t n = 0; n + 1 < text.size(); ++n)
    EXPECT_FALSE(ct::from_text(text.substr(0, n), key, all_kernels(), &p, &why))
        << "accepted the first " << n << " bytes:\n"
        << text.substr(0, n);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::string xgemm = "kernel Xgemm GEMMK=";
  const std::vector<std::string> corrupt = {
      replaced("COPY_DIMX=", "COPY_DIMX=x"),                          // not a number
      replaced("COPY_DIMX=", "COPY_DIMX=-"),                          // negative
      replaced(" COPY_DIMX=", " COPY_DIMZ="),                         // unknown parameter
      replaced(" COPY_DIMX=", " "),                                   // a parameter missing
      replaced("kernel Copy", "kernel Copy COPY_VW=1"),               // a parameter twice
      replaced("kernel Copy", "kernel Pad PAD_DIMX=1\nkernel Copy"),  // a kernel twice
      replaced("kernel Copy", "kernel Xaxpy VW=1\nkernel Copy"),      // a kernel not of GEMM
      replaced(xgemm, "garbage\n" + xgemm),                           // an unknown line
      replaced("key ", "kee "),                                       // no key
      replaced("fallback Xgemm", "fallback Xaxpy"),  // a fallback of no GEMM kernel
      replaced("fallback Xgemm clblast", "fallback Xgemm\nclblast"),  // a fallback without a reason
      text + "kernel Copy COPY_DIMX=1\n",                             // after the end
      std::string(text.size(), '\0'),                                 // zeros
  };
  for (const auto& t : corrupt) {
    EXPECT_FALSE(ct::from_text(t, key, all_kernels(), &p, &why)) << "accepted:\n" << t;
    EXPECT_FALSE(why.empty());
  }
  // Whole but without a kernel the budget tunes.
  std::string no_pad = text;
  no_pad.erase(no_pad.find("kernel Pad "),
               no_pad.find('\n', no_pad.find("kernel Pad ")) - no_pad.find("kernel Pad ") + 1);
  EXPECT_FALSE(ct::from_text(no_pad, key, all_kernels(), &p, &why));
  EXPECT_NE(why.find("Pad"), std::string::npos) << why;
  EXPECT_TRUE(ct::from_text(no_pad, key, {"Copy", "Xgemm"}, &p, &why)) << why;
}

// Parameters CLBlast's GEMM cannot run are never loaded (nor kept from a tuning: tune() falls
// back to CLBlast's own for that kernel and says so).
TEST(ClblastTuneSmoke, UnusableXgemmParametersAreRejected) {
  if (!clblast_has_bug_543())
    GTEST_SKIP() << "CLBlast " << ct::clblast_version() << " has #543 fixed";
  const std::string why = ct::unusable_reason("Xgemm", kXgemmBroken);
  EXPECT_NE(why.find("MWG 128 != NWG 16"), std::string::npos) << why;
  EXPECT_EQ(ct::unusable_reason("Xgemm", kXgemmGood), "");
  auto kernel0 = kXgemmBroken;
  kernel0["GEMMK"] = 0;
  EXPECT_EQ(ct::unusable_reason("Xgemm", kernel0), "") << "GEMMK=0 launches right";
  EXPECT_EQ(ct::unusable_reason("Copy", {{"COPY_DIMX", 8}}), "");

  const std::string key = "device=X;driver=1;clblast=1.5.3;budget=b";
  ct::Tuning t = sample_tuning();
  t.params["Xgemm"] = kXgemmBroken;
  ct::Tuning back;
  std::string error;
  EXPECT_FALSE(ct::from_text(ct::to_text(key, t, 1), key, all_kernels(), &back, &error));
  EXPECT_NE(error.find("#543"), std::string::npos) << error;
  t.params["Xgemm"] = kXgemmGood;
  EXPECT_TRUE(ct::from_text(ct::to_text(key, t, 1), key, all_kernels(), &back, &error)) << error;
}

TEST(ClblastTuneSmoke, BudgetComesFromTheEnvironment) {
  {
    ScopedEnv env("PRIMBENCH_CLBLAST_TUNE", "full");
    EXPECT_EQ(ct::budget_from_env().name, "full");
  }
  {
    ScopedEnv env("PRIMBENCH_CLBLAST_TUNE", "fast");
    try {
      ct::budget_from_env();
      ADD_FAILURE() << "PRIMBENCH_CLBLAST_TUNE=fast accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "PRIMBENCH_CLBLAST_TUNE");
    }
  }
  // The budget is part of the key: a quick tuning never stands in for a full one.
  EXPECT_NE(ct::full_budget().str(), ct::quick_budget().str());
}

// A parameter file for this device (CLBlast's own parameters, Xgemm and Copy changed) is read back
// without tuning and applied: CLBlast then reports those parameters, and a GEMM on them is right.
TEST(ClblastTuneSmoke, CacheFileIsReadAndApplied) {
  SKIP_WITHOUT_OPENCL();
  TempDir dir;
  const ct::Budget b = ct::quick_budget();
  ct::Tuning t;
  t.params = ct::library_defaults();
  ct::Params& p = t.params;
  p["Xgemm"] = kXgemmGood;
  p["Copy"]["COPY_WPT"] = p["Copy"]["COPY_WPT"] == 1 ? 2 : 1;
  ASSERT_NE(p, ct::library_defaults());
  const std::string path = dir.file("tuned.txt");
  write_file_atomic(path, ct::to_text(ct::cache_key(b), t, 5000));
  double tune_ms = -1;
  std::string note;
  ct::Tuning loaded = ct::load_or_tune(b, path, &tune_ms, &note);
  EXPECT_EQ(loaded, t);
  EXPECT_EQ(tune_ms, 0) << "read from the file: no tuning";
  EXPECT_EQ(note, "read " + path);

  ct::apply(loaded.params);
  EXPECT_EQ(current("Xgemm"), p["Xgemm"]);
  EXPECT_EQ(current("Copy"), p["Copy"]);
  // A GEMM on them (m n k multiples of 128 and above the direct-kernel limit: the Xgemm kernel).
  const size_t n = 1024;
  Tensor a({int64_t(n), int64_t(n)}), bm({int64_t(n), int64_t(n)});
  fill_int(a, 1, 2);
  fill_int(bm, 2, 2);
  ocl::Buffer da(a.bytes()), db(bm.bytes()), dc(a.bytes());
  da.upload(a.data(), a.bytes());
  db.upload(bm.data(), bm.bytes());
  cl_command_queue q = ocl::queue();
  ASSERT_EQ(clblast::Gemm<float>(clblast::Layout::kColMajor, clblast::Transpose::kNo,
                                 clblast::Transpose::kNo, n, n, n, 1.0f, da.get(), 0, n, db.get(),
                                 0, n, 0.0f, dc.get(), 0, n, &q),
            clblast::StatusCode::kSuccess);
  Tensor c({int64_t(n), int64_t(n)});
  dc.download(c.data(), c.bytes());
  for (size_t j : {size_t(0), n / 3, n - 1})
    for (size_t i : {size_t(0), n / 2, n - 1}) {
      double want = 0;
      for (size_t l = 0; l < n; ++l) want += double(a[l * n + i]) * bm[j * n + l];
      EXPECT_EQ(c[j * n + i], want) << i << "," << j;
    }
  ct::apply(ct::library_defaults());
  EXPECT_EQ(current("Xgemm"), ct::library_defaults().at("Xgemm"));
}

// A truncated, corrupt or foreign file is ignored: the budget is tuned again and the file
// rewritten whole. One tuner with a few configurations keeps it to a second or two.
TEST(ClblastTuneSmoke, BadCacheFileIsTunedAgainNotLoaded) {
  SKIP_WITHOUT_OPENCL();
  TempDir dir;
  const ct::Budget b{"test", {{"Copy", 256, 0.015}}};
  const std::string key = ct::cache_key(b);
  ct::Tuning bogus;
  bogus.params["Copy"] = {{"COPY_DIMX", 3}, {"COPY_DIMY", 3}, {"COPY_VW", 3}, {"COPY_WPT", 3}};
  const std::string whole = ct::to_text(key, bogus, 1);
  const std::string path = dir.file("tuned.txt");
  for (const std::string& bad : {whole.substr(0, whole.size() - 4),  // truncated
                                 whole.substr(0, whole.find("COPY_WPT")) + "COPY_WPT=??\nend\n",
                                 ct::to_text(key + "x", bogus, 1)}) {  // another key
    write_file_atomic(path, bad);
    double tune_ms = 0;
    std::string note;
    ct::Tuning t = ct::load_or_tune(b, path, &tune_ms, &note);
    EXPECT_GT(tune_ms, 0) << "tuned again";
    EXPECT_EQ(note.rfind("ignored " + path, 0), 0u) << note;
    ASSERT_EQ(t.params.size(), 1u);
    EXPECT_NE(t.params["Copy"], bogus.params["Copy"]);
    EXPECT_EQ(t.params["Copy"].size(), 4u);
    EXPECT_TRUE(t.fallbacks.empty());
    // The file now holds the new parameters, whole.
    ct::Tuning back;
    std::string why;
    ASSERT_TRUE(ct::from_text(read_text(path), key, {"Copy"}, &back, &why)) << why;
    EXPECT_EQ(back, t);
  }
}

TEST(ClblastTuneSmoke, FailingTunerIsAnErrorNamingIt) {
  SKIP_WITHOUT_OPENCL();
  TempDir dir;
  const std::string path = dir.file("tuned.txt");
  // A fraction that samples no configuration: CLBlast's tuner has nothing to return.
  const ct::Budget b{"test", {{"Copy", 256, 1e-9}}};
  double tune_ms = 0;
  std::string note;
  try {
    ct::load_or_tune(b, path, &tune_ms, &note);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("clblast::TuneCopy"), std::string::npos) << what;
    EXPECT_NE(what.find("kUnexpectedError"), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << "a failed tuning must not be cached";
}

// ocl/clblast plans on the tuned parameters and ocl/clblast_default on CLBlast's; run()
// restores each one's own after the other changed them (the override is process-wide).
TEST(ClblastTuneSmoke, TunedAndDefaultEachRunTheirOwnParameters) {
  SKIP_WITHOUT_OPENCL();
  auto make = [](const std::string& name) {
    for (const auto& e : gemm_registry())
      if (e.name == name) return e.make();
    ADD_FAILURE() << name << " not in the registry";
    return std::unique_ptr<GemmImpl>();
  };
  auto tuned = make("ocl/clblast"), plain = make("ocl/clblast_default");
  ASSERT_TRUE(tuned && plain);
  GemmDesc d = GemmDesc::parse("m64n48k40");
  Tensor a({d.a_cols(), d.lda}), b({d.b_cols(), d.ldb}), c({d.n, d.ldc});
  fill_int(a, 1, 2);
  fill_int(b, 2, 2);
  c.fill(0);
  plan_phases(*tuned, d, Dir::fwd, {&a, &b, &c});
  double ignored = 0;
  const ct::Params& want_tuned = ct::tuned(&ignored).params;
  const ct::Params& want_default = ct::library_defaults();
  if (want_tuned == want_default)
    GTEST_SKIP() << "the tuning chose CLBlast's own parameters: nothing to tell apart";
  auto now = [] {
    ct::Params p;
    for (const auto& [kernel, names] : ct::kernel_parameters()) p[kernel] = current(kernel);
    return p;
  };
  EXPECT_EQ(now(), want_tuned);
  plan_phases(*plain, d, Dir::fwd, {&a, &b, &c});
  EXPECT_EQ(now(), want_default);
  tuned->run();
  tuned->sync();
  EXPECT_EQ(now(), want_tuned);
  plain->run();
  plain->sync();
  EXPECT_EQ(now(), want_default);
  auto counter = [](const GemmImpl& impl, const std::string& name) {
    for (const auto& [k, v] : impl.extra_counters())
      if (k == name) return v;
    return -1.0;
  };
  EXPECT_EQ(counter(*tuned, "tuned"), 1.0);
  EXPECT_EQ(counter(*plain, "tuned"), 0.0);
  EXPECT_EQ(counter(*plain, "tune_ms"), 0.0);
}

}  // namespace
}  // namespace pb
#endif  // PRIMBENCH_HAVE_OPENCL
