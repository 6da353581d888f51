// CLBlast's tuners run for ocl/clblast, their parameters cached on disk as a small text file and
// applied with clblast::OverrideParameters (see clblast_tuning.h).
#include "kernels/gemm/opencl/clblast_tuning.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "kernels/core/error.h"
#include "kernels/core/io.h"
#include "kernels/opencl/runtime.h"

#ifndef PRIMBENCH_CLBLAST_VERSION
#define PRIMBENCH_CLBLAST_VERSION ""
#endif

namespace pb::clblast_tuning {
namespace {

using Map = std::unordered_map<std::string, size_t>;

// Whether the CLBlast built against is at least major.minor.patch (false when unknown).
bool clblast_at_least(int major, int minor, int patch) {
  int v[3] = {0, 0, 0};
  if (std::sscanf(clblast_version().c_str(), "%d.%d.%d", &v[0], &v[1], &v[2]) < 2) return false;
  if (v[0] != major) return v[0] > major;
  if (v[1] != minor) return v[1] > minor;
  return v[2] >= patch;
}

// One line of the key: no newlines from device strings.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

clblast::StatusCode run_tuner(const TunerRun& r, cl_command_queue* q, Map& out) {
  const size_t s = r.size;
  const double f = r.fraction;
  if (r.kernel == "Xgemm") return clblast::TuneXgemm<float>(q, s, s, s, f, out);
  if (r.kernel == "XgemmDirect") return clblast::TuneXgemmDirect<float>(q, s, s, s, f, out);
  if (r.kernel == "Copy") return clblast::TuneCopy<float>(q, s, s, f, out);
  if (r.kernel == "Pad") return clblast::TunePad<float>(q, s, s, f, out);
  if (r.kernel == "Transpose") return clblast::TuneTranspose<float>(q, s, s, f, out);
  if (r.kernel == "Padtranspose") return clblast::TunePadtranspose<float>(q, s, s, f, out);
  throw RuntimeError("no CLBlast tuner for kernel '" + r.kernel + "'");
}

// "" when `got` has exactly the parameter names of `kernel`, else what is wrong.
std::string check_names(const std::string& kernel, const std::map<std::string, size_t>& got) {
  auto it = kernel_parameters().find(kernel);
  if (it == kernel_parameters().end()) return "unknown kernel '" + kernel + "'";
  std::set<std::string> want(it->second.begin(), it->second.end());
  for (const auto& name : want)
    if (!got.count(name)) return kernel + " lacks parameter " + name;
  for (const auto& [name, value] : got)
    if (!want.count(name)) return kernel + " has unknown parameter " + name;
  return "";
}

bool parse_value(const std::string& s, size_t* v) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *v = static_cast<size_t>(std::stoul(s));
  return true;
}

// One "kernel <name> <param>=<value> ..." line into *p; "" or what is wrong.
std::string parse_kernel_line(std::istringstream& in, Params* p) {
  std::string kernel, token;
  if (!(in >> kernel)) return "kernel line without a name";
  if (p->count(kernel)) return "kernel " + kernel + " twice";
  std::map<std::string, size_t> values;
  while (in >> token) {
    size_t eq = token.find('=');
    size_t v = 0;
    if (eq == std::string::npos || !parse_value(token.substr(eq + 1), &v))
      return "bad parameter '" + token + "' for " + kernel;
    if (!values.emplace(token.substr(0, eq), v).second)
      return kernel + " names " + token.substr(0, eq) + " twice";
  }
  if (std::string why = check_names(kernel, values); !why.empty()) return why;
  if (std::string why = unusable_reason(kernel, values); !why.empty())
    return kernel + " parameters unusable: " + why;
  (*p)[kernel] = std::move(values);
  return "";
}

// One "fallback <kernel> <why>" line into *fallbacks; "" or what is wrong.
std::string parse_fallback_line(std::istringstream& in, std::map<std::string, std::string>* f) {
  std::string kernel, why;
  if (!(in >> kernel) || !kernel_parameters().count(kernel)) return "fallback of no known kernel";
  std::getline(in >> std::ws, why);
  if (why.empty()) return "fallback of " + kernel + " without a reason";
  if (!f->emplace(kernel, why).second) return "fallback of " + kernel + " twice";
  return "";
}

std::string num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string clblast_version() {
  std::string v = PRIMBENCH_CLBLAST_VERSION;
  return v.empty() ? "unknown" : v;
}

const std::map<std::string, std::vector<std::string>>& kernel_parameters() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"Xgemm",
       {"GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC", "NWG", "SA", "SB",
        "STRM", "STRN", "VWM", "VWN"}},
      {"XgemmDirect",
       {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD", "PADA", "PADB", "VWMD", "VWND", "WGD"}},
      {"Copy", {"COPY_DIMX", "COPY_DIMY", "COPY_VW", "COPY_WPT"}},
      {"Pad", {"PAD_DIMX", "PAD_DIMY", "PAD_WPTX", "PAD_WPTY"}},
      {"Transpose", {"TRA_DIM", "TRA_PAD", "TRA_SHUFFLE", "TRA_WPT"}},
      {"Padtranspose", {"PADTRA_PAD", "PADTRA_TILE", "PADTRA_WPT"}},
  };
  return k;
}

std::string Budget::str() const {
  std::string s = name + ":";
  for (size_t i = 0; i < runs.size(); ++i)
    s += (i ? "," : "") + runs[i].kernel + "@" + std::to_string(runs[i].size) + "/" +
         num(runs[i].fraction) +
         (runs[i].attempts > 1 ? "x" + std::to_string(runs[i].attempts) : "");
  return s;
}

// Each configuration costs a PoCL build (about 0.5 s for Xgemm, 0.15 s for the copy kernels) and
// num_runs = 10 runs. TuneXgemm samples `fraction` of two spaces, kernel 0 (GEMMK=0, about 121k
// configurations here) and then kernel 1 (GEMMK=1, about 17k), and returns kernel 1's best
// whatever kernel 0's was: 0.0005 is 60 + 8 configurations, half of the 8 unusable on CLBlast 1.5
// and about as fast as the others at 256, so timing noise decides; a rerun costs about 5 s, the
// builds cached by PoCL. Sizes: Xgemm needs multiples of 128; 1024 is CLBlast's own default for
// the copy kernels. About 80 s here (2 busy cores, PoCL's cache empty), 45 of them TuneXgemm.
Budget full_budget() {
  return {"full",
          {{"Xgemm", 256, 0.0005, 3},
           {"XgemmDirect", 256, 0.001},
           {"Copy", 1024, 0.1},
           {"Pad", 1024, 0.1},
           {"Transpose", 1024, 0.1},
           {"Padtranspose", 1024, 0.15}}};
}

// Xgemm samples 7 + 1 configurations.
Budget quick_budget() {
  return {"quick",
          {{"Xgemm", 128, 0.00007},
           {"XgemmDirect", 128, 0.0003},
           {"Copy", 256, 0.015},
           {"Pad", 256, 0.025},
           {"Transpose", 256, 0.025},
           {"Padtranspose", 256, 0.06}}};
}

std::string unusable_reason(const std::string& kernel,
                            const std::map<std::string, size_t>& values) {
  if (kernel != "Xgemm" || clblast_at_least(1, 6, 3)) return "";
  auto at = [&](const char* name) {
    auto it = values.find(name);
    return it == values.end() ? size_t(0) : it->second;
  };
  if (at("GEMMK") != 1 || at("MWG") == at("NWG")) return "";
  return "GEMMK=1 with MWG " + std::to_string(at("MWG")) + " != NWG " + std::to_string(at("NWG")) +
         ": CLBlast " + clblast_version() +
         "'s GEMM launches that kernel on a wrong grid (fixed in 1.6.3, CLBlast #543)";
}

Budget budget_from_env() {
  const char* env = std::getenv("PRIMBENCH_CLBLAST_TUNE");
  std::string v = env ? env : "";
  if (v.empty() || v == "full") return full_budget();
  if (v == "quick") return quick_budget();
  throw InputError("PRIMBENCH_CLBLAST_TUNE", "unknown value '" + v + "' (full, quick)");
}

std::string cache_key(const Budget& b) {
  const ocl::DeviceInfo& info = ocl::device_info();
  return one_line("device=" + info.name + ";driver=" + info.driver_version +
                  ";clblast=" + clblast_version() + ";budget=" + b.str());
}

std::string cache_path(const Budget& b) {
  std::string dir = ocl::cache_dir();
  if (dir.empty()) return "";
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", ocl::fnv1a64(cache_key(b)));
  return dir + "/clblast_tuned_" + hex + ".txt";
}

std::string to_text(const std::string& key, const Tuning& t, double tune_ms) {
  std::ostringstream o;
  o << "# CLBlast parameters chosen by clblast::Tune* for ocl/clblast "
       "(kernels/gemm/opencl/clblast_tuning.h)\n";
  o << "key " << key << "\n";
  o << "tune_ms " << static_cast<long long>(tune_ms) << "\n";
  for (const auto& [kernel, values] : t.params) {
    o << "kernel " << kernel;
    for (const auto& [name, value] : values) o << " " << name << "=" << value;
    o << "\n";
  }
  for (const auto& [kernel, why] : t.fallbacks)
    o << "fallback " << kernel << " " << one_line(why) << "\n";
  o << "end\n";
  return o.str();
}

bool from_text(const std::string& text, const std::string& key,
               const std::vector<std::string>& kernels, Tuning* t, std::string* why) {
  Tuning out;
  std::istringstream lines(text);
  std::string line;
  bool have_key = false, ended = false;
  auto fail = [&](const std::string& w) {
    *why = w;
    return false;
  };
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (ended) return fail("text after 'end'");
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "key") {
      std::string k = line.size() > 4 ? line.substr(4) : "";
      if (k != key)
        return fail("written for another device, driver, CLBlast or budget (" + k + ")");
      have_key = true;
    } else if (!have_key) {
      return fail("no key line first");
    } else if (word == "tune_ms") {
      continue;  // informational
    } else if (word == "kernel") {
      if (std::string w = parse_kernel_line(in, &out.params); !w.empty()) return fail(w);
    } else if (word == "fallback") {
      if (std::string w = parse_fallback_line(in, &out.fallbacks); !w.empty()) return fail(w);
    } else if (word == "end") {
      ended = true;
    } else {
      return fail("unknown line '" + line.substr(0, 40) + "'");
    }
  }
  if (!have_key) return fail("empty or no key line");
  if (!ended) return fail("truncated (no 'end' line)");
  for (const auto& k : kernels)
    if (!out.params.count(k)) return fail("no parameters for kernel " + k);
  for (const auto& [k, w] : out.fallbacks)
    if (!out.params.count(k)) return fail("fallback of " + k + " without its parameters");
  *t = std::move(out);
  return true;
}

Tuning tune(const Budget& b) {
  cl_command_queue q = ocl::queue();
  Tuning t;
  for (const TunerRun& r : b.runs) {
    const std::string call = "clblast::Tune" + r.kernel + "<float>(size " + std::to_string(r.size) +
                             ", fraction " + num(r.fraction) + ")";
    std::string unusable;
    for (int attempt = 0; attempt < std::max(1, r.attempts) && !t.params.count(r.kernel);
         ++attempt) {
      Map found;
      clblast::StatusCode s;
      try {
        s = run_tuner(r, &q, found);
      } catch (const std::exception& e) {  // CLBlast's argument checks throw through its API
        throw RuntimeError(call + " threw: " + e.what());
      }
      if (s != clblast::StatusCode::kSuccess)
        throw RuntimeError(call + " failed: " + status_name(s) +
                           (s == clblast::StatusCode::kUnexpectedError
                                ? " (no sampled configuration ran correctly: raise the fraction)"
                                : ""));
      std::map<std::string, size_t> values(found.begin(), found.end());
      if (std::string why = check_names(r.kernel, values); !why.empty())
        throw RuntimeError(call + " returned unexpected parameters: " + why);
      if (std::string why = unusable_reason(r.kernel, values); !why.empty()) {
        std::fprintf(stderr, "primbench: %s chose unusable parameters: %s\n", call.c_str(),
                     why.c_str());
        unusable += (unusable.empty() ? "" : "; then ") + why;
        continue;
      }
      t.params[r.kernel] = std::move(values);
    }
    if (!t.params.count(r.kernel)) {
      t.params[r.kernel] = library_defaults().at(r.kernel);
      t.fallbacks[r.kernel] = call + " chose unusable parameters " +
                              std::to_string(std::max(1, r.attempts)) + " times: " + unusable;
      std::fprintf(stderr, "primbench: CLBlast's %s keeps its own parameters\n", r.kernel.c_str());
    }
  }
  return t;
}

Tuning load_or_tune(const Budget& b, const std::string& path, double* tune_ms, std::string* note) {
  *tune_ms = 0;
  note->clear();
  const std::string key = cache_key(b);
  std::vector<std::string> kernels;
  for (const TunerRun& r : b.runs) kernels.push_back(r.kernel);
  if (!path.empty()) {
    std::ifstream f(path, std::ios::binary);
    if (f) {
      std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      Tuning t;
      std::string why;
      if (from_text(text, key, kernels, &t, &why)) {
        *note = "read " + path;
        return t;
      }
      *note = "ignored " + path + ": " + why + "; tuned again";
      std::fprintf(stderr, "primbench: ignoring %s: %s; tuning CLBlast again\n", path.c_str(),
                   why.c_str());
    }
  }
  std::fprintf(stderr, "primbench: tuning CLBlast for %s (budget %s; once, then cached%s%s)\n",
               ocl::device_info().name.c_str(), b.name.c_str(),
               path.empty() ? " in memory" : " in ", path.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  Tuning t = tune(b);
  *tune_ms = ms_since(t0);
  std::fprintf(stderr, "primbench: CLBlast tuned in %.1f s\n", *tune_ms / 1000);
  if (!path.empty()) {
    try {
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      write_file_atomic(path, to_text(key, t, *tune_ms));
    } catch (const std::exception& e) {  // a read-only cache is not an error
      *note += (note->empty() ? "" : "; ") + std::string("not cached: ") + e.what();
      std::fprintf(stderr, "primbench: CLBlast parameters not cached: %s\n", e.what());
    }
  }
  return t;
}

const Tuning& tuned(double* tune_ms) {
  *tune_ms = 0;
  const Budget b = budget_from_env();
  struct Entry {
    Tuning tuning;
    std::string error;
  };
  static std::mutex m;
  static std::map<std::string, Entry>* memo = new std::map<std::string, Entry>();
  std::lock_guard<std::mutex> lock(m);
  auto it = memo->find(b.str());
  if (it == memo->end()) {
    Entry e;
    std::string note;
    try {
      e.tuning = load_or_tune(b, cache_path(b), tune_ms, &note);
    } catch (const Unsupported&) {
      throw;  // no device: not a tuning failure
    } catch (const std::exception& ex) {
      e.error = std::string("ocl/clblast: tuning CLBlast failed: ") + ex.what() +
                " (ocl/clblast_default runs CLBlast's own parameters)";
    }
    it = memo->emplace(b.str(), std::move(e)).first;
  }
  if (!it->second.error.empty()) throw RuntimeError(it->second.error);
  return it->second.tuning;
}

const Params& library_defaults() {
  static std::mutex m;
  static Params* defaults = nullptr;
  std::lock_guard<std::mutex> lock(m);
  if (!defaults) {
    Params p;
    for (const auto& [kernel, names] : kernel_parameters()) {
      Map values;
      clblast::StatusCode s =
          clblast::RetrieveParameters(ocl::device(), kernel, clblast::Precision::kSingle, values);
      if (s != clblast::StatusCode::kSuccess)
        throw RuntimeError("clblast::RetrieveParameters(" + kernel + ") failed: " + status_name(s));
      p[kernel] = std::map<std::string, size_t>(values.begin(), values.end());
    }
    defaults = new Params(std::move(p));
  }
  return *defaults;
}

void apply(const Params& p) {
  library_defaults();  // read before the first override changes what CLBlast returns
  static std::mutex m;
  static Params* applied = new Params();
  std::lock_guard<std::mutex> lock(m);
  if (*applied == p) return;
  applied->clear();  // a failure below leaves the state unknown: apply again next time
  for (const auto& [kernel, values] : p) {
    Map map(values.begin(), values.end());
    clblast::StatusCode s =
        clblast::OverrideParameters(ocl::device(), kernel, clblast::Precision::kSingle, map);
    if (s != clblast::StatusCode::kSuccess)
      throw RuntimeError("clblast::OverrideParameters(" + kernel + ") failed: " + status_name(s));
  }
  *applied = p;
}

std::string status_name(clblast::StatusCode s) {
  int code = static_cast<int>(s);
  if (code <= 0 && code > -100) return ocl::error_name(code);  // the OpenCL codes
  switch (s) {
    case clblast::StatusCode::kNotImplemented:
      return "kNotImplemented";
    case clblast::StatusCode::kInvalidMatrixA:
      return "kInvalidMatrixA";
    case clblast::StatusCode::kInvalidMatrixB:
      return "kInvalidMatrixB";
    case clblast::StatusCode::kInvalidMatrixC:
      return "kInvalidMatrixC";
    case clblast::StatusCode::kInvalidDimension:
      return "kInvalidDimension";
    case clblast::StatusCode::kInvalidLeadDimA:
      return "kInvalidLeadDimA";
    case clblast::StatusCode::kInvalidLeadDimB:
      return "kInvalidLeadDimB";
    case clblast::StatusCode::kInvalidLeadDimC:
      return "kInvalidLeadDimC";
    case clblast::StatusCode::kInsufficientMemoryA:
      return "kInsufficientMemoryA";
    case clblast::StatusCode::kInsufficientMemoryB:
      return "kInsufficientMemoryB";
    case clblast::StatusCode::kInsufficientMemoryC:
      return "kInsufficientMemoryC";
    case clblast::StatusCode::kInsufficientMemoryTemp:
      return "kInsufficientMemoryTemp";
    case clblast::StatusCode::kInvalidLocalMemUsage:
      return "kInvalidLocalMemUsage";
    case clblast::StatusCode::kInvalidOverrideKernel:
      return "kInvalidOverrideKernel";
    case clblast::StatusCode::kMissingOverrideParameter:
      return "kMissingOverrideParameter";
    case clblast::StatusCode::kDatabaseError:
      return "kDatabaseError";
    case clblast::StatusCode::kUnknownError:
      return "kUnknownError";
    case clblast::StatusCode::kUnexpectedError:
      return "kUnexpectedError";
    default:
      return "StatusCode(" + std::to_string(code) + ")";
  }
}

}  // namespace pb::clblast_tuning
