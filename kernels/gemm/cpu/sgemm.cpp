// The SGEMM dispatch (sgemm.h), OpenBLAS through CBLAS, and BLIS through its typed API loaded
// with dlopen(RTLD_LOCAL): BLIS also exports BLAS/CBLAS symbols, and linking it beside OpenBLAS
// would let one silently serve the other's calls.
#include "kernels/gemm/cpu/sgemm.h"

#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>

#include <cstdlib>

#include "kernels/core/error.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

namespace pb {

namespace {

// BLIS's typed API (blis.h, bli_l3_tapi.h): trans_t is an enum whose transpose bit is 0x8,
// dim_t and inc_t are 64-bit (BLIS_INT_TYPE_SIZE 64, Debian's build).
using blis_dim = int64_t;
using BliSgemm = void (*)(int transa, int transb, blis_dim m, blis_dim n, blis_dim k, float* alpha,
                          float* a, blis_dim rsa, blis_dim csa, float* b, blis_dim rsb,
                          blis_dim csb, float* beta, float* c, blis_dim rsc, blis_dim csc);
using BliSetThreads = void (*)(blis_dim);
using BliInfoVersion = const char* (*)();
constexpr int kBlisNoTrans = 0x0, kBlisTrans = 0x8;

struct Blis {
  BliSgemm sgemm = nullptr;
  BliSetThreads set_threads = nullptr;
  std::string version, arch, why;
};

const Blis& blis() {
  static const Blis b = [] {
    Blis r;
    // Debian's OpenMP build first (it shares our thread pool), then the others.
    const char* paths[] = {"/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4",
                           "/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4",
                           "/usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4", "libblis.so.4"};
    void* h = nullptr;
    for (const char* p : paths)
      if ((h = dlopen(p, RTLD_NOW | RTLD_LOCAL))) break;
    if (!h) {
      r.why = "BLIS not installed (Debian: libblis4-openmp; tools/setup installs it)";
      return r;
    }
    r.sgemm = reinterpret_cast<BliSgemm>(dlsym(h, "bli_sgemm"));
    r.set_threads = reinterpret_cast<BliSetThreads>(dlsym(h, "bli_thread_set_num_threads"));
    auto ver = reinterpret_cast<BliInfoVersion>(dlsym(h, "bli_info_get_version_str"));
    if (!r.sgemm || !r.set_threads) {
      r.why = "the BLIS library found lacks bli_sgemm or bli_thread_set_num_threads";
      r.sgemm = nullptr;
      return r;
    }
    r.version = ver ? ver() : "unknown";
    // The kernel set BLIS dispatched to ("zen3", "skx", ... or "generic": reference C).
    auto arch_id = reinterpret_cast<int (*)()>(dlsym(h, "bli_arch_query_id"));
    auto arch_str = reinterpret_cast<const char* (*)(int)>(dlsym(h, "bli_arch_string"));
    r.arch = arch_id && arch_str ? arch_str(arch_id()) : "unknown";
    return r;
  }();
  return b;
}

enum class Lib { packed, openblas, blis };

Lib chosen() {
  static const Lib l = [] {
    const char* e = std::getenv("PRIMBENCH_SGEMM");
    const std::string v = e ? e : "";
    if (v.empty() || v == "packed") return Lib::packed;
    if (v == "openblas") return Lib::openblas;
    if (v == "blis") {
      if (!blis().why.empty()) throw InputError("PRIMBENCH_SGEMM", "blis: " + blis().why);
      return Lib::blis;
    }
    throw InputError("PRIMBENCH_SGEMM", "'" + v + "' is not packed, openblas or blis");
  }();
  return l;
}

}  // namespace

const std::string& sgemm_library() {
  static const std::string names[] = {"packed", "openblas", "blis"};
  return names[static_cast<int>(chosen())];
}

std::string blis_unavailable() {
  return blis().why;
}

std::string blis_version() {
  return blis().version;
}

std::string blis_arch() {
  return blis().arch;
}

void sgemm_openblas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void sgemm_blis(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const Blis& bl = blis();
  if (!bl.sgemm) throw Unsupported(bl.why);
  // Our thread count, every call (it may change between calls); one thread inside a region.
  bl.set_threads(omp_in_parallel() ? 1 : omp_get_max_threads());
  // Column-major: row stride 1, column stride ld. BLIS applies the transposes to the operands
  // as stored, like BLAS.
  bl.sgemm(ta ? kBlisTrans : kBlisNoTrans, tb ? kBlisTrans : kBlisNoTrans, m, n, k, &alpha,
           const_cast<float*>(a), 1, lda, const_cast<float*>(b), 1, ldb, &beta, c, 1, ldc);
}

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm_post(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
}

void sgemm_post(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                const PostOps* post) {
  switch (chosen()) {
    case Lib::packed:
      return sgemm_packed_post(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, post);
    case Lib::openblas:
      sgemm_openblas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      break;
    case Lib::blis:
      sgemm_blis(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      break;
  }
  if (post) apply_post_ops(*post, m, n, c, ldc, c, ldc);
}

}  // namespace pb
