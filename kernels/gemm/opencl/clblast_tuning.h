// CLBlast tuned for the device, as CLBlast users tune it: its own tuners (clblast::Tune*) run once
// per device in the untimed plan phase, the parameters they choose are cached on disk next to
// the OpenCL binaries, and clblast::OverrideParameters puts them in before the GEMM runs.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <clblast.h>

#include "kernels/gemm/gemm.h"

namespace pb::clblast_tuning {

// Kernel name ("Xgemm") -> parameter name ("MWG") -> value: the kernels of CLBlast's GEMM routine.
using Params = std::map<std::string, std::map<std::string, size_t>>;

// The kernels CLBlast's GEMM routine uses and its tuning API tunes, with the parameter names
// OverrideParameters requires for each (CLBlast 1.5 doc/tuning.md). The routine's own
// XGEMM_MIN_INDIRECT_SIZE ("GemmRoutine") has no tuning API and keeps CLBlast's value.
const std::map<std::string, std::vector<std::string>>& kernel_parameters();

// One CLBlast tuner of a budget: the kernel, the problem size (m = n = k), the fraction of the
// kernel's search space it samples (CLBlast's `fraction`; its shuffle is seeded, so a budget always
// samples the same configurations, and only timings decide among them), and how many times to
// run it while its choice is unusable (see unusable_reason(); a rerun measures the same
// configurations again, which the OpenCL driver has usually cached built).
struct TunerRun {
  std::string kernel;
  size_t size = 0;
  double fraction = 0;
  int attempts = 1;
};

// How much tuning; its name and runs are part of the cache key.
struct Budget {
  std::string name;
  std::vector<TunerRun> runs;
  std::string str() const;  // "full:Xgemm@256/0.0005x3,..."
};
// "full": the six GEMM kernels, about a minute on PoCL with 2 cores. "quick": one to a few
// configurations each, for tests (any valid parameters serve a conformance check).
Budget full_budget();
Budget quick_budget();
// PRIMBENCH_CLBLAST_TUNE: "full" (default) or "quick"; InputError naming the variable otherwise.
Budget budget_from_env();

// The outcome of a tuning: parameters for every kernel of the budget, and the kernels that keep
// CLBlast's own parameters because the tuner's choice is unusable, with why.
struct Tuning {
  Params params;
  std::map<std::string, std::string> fallbacks;
  bool operator==(const Tuning& o) const { return params == o.params && fallbacks == o.fallbacks; }
};

// Why CLBlast's GEMM routine cannot run `kernel` on `values` though its tuner chose them, or "".
// CLBlast before 1.6.3 launches the GEMMK=1 Xgemm kernel on a wrong grid when MWG != NWG (wrong
// results, writes out of bounds; CLBlast #543), and TuneXgemm returns GEMMK=1 parameters only.
std::string unusable_reason(const std::string& kernel, const std::map<std::string, size_t>& values);

// The CLBlast version built against ("1.5.3"; "unknown" when pkg-config did not say).
std::string clblast_version();

// What cached parameters are valid for: device name, driver version, CLBlast version, budget.
std::string cache_key(const Budget& b);
// <ocl::cache_dir()>/clblast_tuned_<hash of the key>.txt; "" when the cache is off
// (PRIMBENCH_CL_CACHE=off).
std::string cache_path(const Budget& b);

// The cache file's text: the key, the tuning time, one line per kernel and per fallback, "end".
std::string to_text(const std::string& key, const Tuning& t, double tune_ms);
// Parses a cache file written by to_text for `key`. False with *why when it is truncated or
// corrupt, was written for another key, lacks a kernel of `kernels` or one of its parameters, or
// holds unusable parameters.
bool from_text(const std::string& text, const std::string& key,
               const std::vector<std::string>& kernels, Tuning* t, std::string* why);

// Runs CLBlast's tuners of the budget on ocl::queue() (single precision). Throws RuntimeError
// naming the tuner, its arguments and CLBlast's status when one fails. A kernel whose choice is
// unusable (unusable_reason()) at every attempt keeps CLBlast's own parameters and is named in the
// fallbacks.
Tuning tune(const Budget& b);

// The tuning for budget `b`: read from `path` when it holds a valid file for the key, else tuned
// and written there (temp file + rename; "" reads and writes nothing). *tune_ms: the time spent
// tuning (0 when read). *note: what happened, e.g. why an existing file was ignored.
Tuning load_or_tune(const Budget& b, const std::string& path, double* tune_ms, std::string* note);

// Once per process (per budget_from_env()): load_or_tune() at cache_path(). *tune_ms is the tuning
// time for the call that tuned, 0 for every other call and when the cache had them. A failed
// tuning throws, here and on every later call, without tuning again.
const Tuning& tuned(double* tune_ms);

// CLBlast's own parameters for the device (its database: what ocl/clblast_default runs), read
// before any override is applied.
const Params& library_defaults();

// Makes `p` CLBlast's parameters for the device (OverrideParameters per kernel) unless they
// already are. The override is process-wide: an implementation calls this before each GEMM.
void apply(const Params& p);

// "kInvalidMatrixA", "CL_OUT_OF_RESOURCES" (the OpenCL codes), or "StatusCode(<n>)".
std::string status_name(clblast::StatusCode s);

// The CLBlast GEMM (clblast.cpp) on the tuned parameters (ocl/clblast) or on CLBlast's own
// (ocl/clblast_default).
std::unique_ptr<GemmImpl> make_gemm(bool tuned);

}  // namespace pb::clblast_tuning
