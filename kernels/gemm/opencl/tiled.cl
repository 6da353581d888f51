// Register-blocked, local-memory-tiled SGEMM (column-major, BLAS semantics) for any size,
// transpose, leading dimensions, alpha and beta. Tunables below; the host passes the same values.

// Tile of C per work-group (TSM x TSN), depth of one K step (TSK), micro-tile per work-item
// (WPTM x WPTN), vector width over M (VW: 1, 2, 4, 8 or 16; WPTM % VW == 0).
#ifndef TSM
#define TSM 128
#endif
#ifndef TSN
#define TSN 128
#endif
#ifndef TSK
#define TSK 128
#endif
#ifndef WPTM
#define WPTM 32
#endif
#ifndef WPTN
#define WPTN 8
#endif
#ifndef VW
#define VW 16
#endif
// Transposes: op(A) = A^T when TA, op(B) = B^T when TB.
#ifndef TA
#define TA 0
#endif
#ifndef TB
#define TB 0
#endif

#define RTSM (TSM / WPTM)  // work-items along M
#define RTSN (TSN / WPTN)  // work-items along N
#define WG (RTSM * RTSN)
#define VM (WPTM / VW)  // vectors per micro-tile column

#if VW == 1
#define floatV float
#define VLOAD(p) (*(p))
#define VSTORE(v, p) (*(p) = (v))
#else
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VW)
#define VLOAD(p) CAT(vload, VW)(0, (p))
#define VSTORE(v, p) CAT(vstore, VW)((v), 0, (p))
#endif

// Local layouts: Al[k][m] (M contiguous, vector loads); Bl[n][k] when !TB, Bl[k][n] when TB.
#define AL(k, m) Al[(k) * TSM + (m)]
#if TB
#define BL(k, n) Bl[(k) * TSN + (n)]
#else
#define BL(k, n) Bl[(n) * TSK + (k)]
#endif

// Copies the R x C tile at (r0, c0) of the column-major matrix X (rows x cols, leading dimension
// ld) into local memory: L[c * R + r] ("same") or, when TRANS, L[r * C + c]. Out-of-range
// elements become 0. Full tiles use vector loads.
inline void load_tile(__global const float* X, int ld, int rows, int cols, int r0, int c0,
                      __local float* L, const int R, const int C, const int trans, int lid) {
  if (r0 + R <= rows && c0 + C <= cols) {
    const int RV = R / VW;  // vectors per column
    for (int e = lid; e < RV * C; e += WG) {
      const int c = e / RV, rv = (e - c * RV) * VW;
      floatV v = VLOAD(X + (size_t)(c0 + c) * ld + r0 + rv);
      if (!trans) {
        VSTORE(v, L + c * R + rv);
      } else {
#if VW == 1
        L[rv * C + c] = v;
#else
        float tmp[VW];
        VSTORE(v, tmp);
        for (int i = 0; i < VW; ++i) L[(rv + i) * C + c] = tmp[i];
#endif
      }
    }
  } else {
    for (int e = lid; e < R * C; e += WG) {
      const int c = e / R, r = e - c * R;
      float v = (r0 + r < rows && c0 + c < cols) ? X[(size_t)(c0 + c) * ld + r0 + r] : 0.0f;
      L[trans ? r * C + c : c * R + r] = v;
    }
  }
}

// The body of one work-group's TSM x TSN tile of C (shared by gemm_tiled and gemm_tiled_batched).
inline void gemm_tiled_body(const int M, const int N, const int K, const float alpha,
                            const float beta, __global const float* restrict A, const int lda,
                            __global const float* restrict B, const int ldb, __global float* C,
                            const int ldc, __local float* Al, __local float* Bl) {
  const int tm = get_local_id(0), tn = get_local_id(1);
  const int lid = tn * RTSM + tm;
  const int m0 = get_group_id(0) * TSM, n0 = get_group_id(1) * TSN;

  floatV acc[WPTN][VM];
#pragma unroll
  for (int j = 0; j < WPTN; ++j)
#pragma unroll
    for (int v = 0; v < VM; ++v) acc[j][v] = (floatV)(0.0f);

  for (int k0 = 0; k0 < K; k0 += TSK) {
#if TA
    load_tile(A, lda, K, M, k0, m0, Al, TSK, TSM, 1, lid);
#else
    load_tile(A, lda, M, K, m0, k0, Al, TSM, TSK, 0, lid);
#endif
#if TB
    load_tile(B, ldb, N, K, n0, k0, Bl, TSN, TSK, 0, lid);
#else
    load_tile(B, ldb, K, N, k0, n0, Bl, TSK, TSN, 0, lid);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    const int kt = min(TSK, K - k0);
    for (int k = 0; k < kt; ++k) {
      floatV a[VM];
#pragma unroll
      for (int v = 0; v < VM; ++v) a[v] = VLOAD(&AL(k, tm * WPTM + v * VW));
#pragma unroll
      for (int j = 0; j < WPTN; ++j) {
        const float b = BL(k, tn * WPTN + j);
#pragma unroll
        for (int v = 0; v < VM; ++v) acc[j][v] = fma(a[v], (floatV)(b), acc[j][v]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  // C = alpha * acc + beta * C; beta == 0 never reads C.
  const int mb = m0 + tm * WPTM;
  const bool full_m = mb + WPTM <= M;
#pragma unroll
  for (int j = 0; j < WPTN; ++j) {
    const int n = n0 + tn * WPTN + j;
    if (n >= N) break;
    __global float* c = C + (size_t)n * ldc + mb;
    if (full_m) {
#pragma unroll
      for (int v = 0; v < VM; ++v) {
        floatV r = alpha * acc[j][v];
        if (beta != 0.0f) r += beta * VLOAD(c + v * VW);
        VSTORE(r, c + v * VW);
      }
    } else {
#pragma unroll
      for (int v = 0; v < VM; ++v) {
        float tmp[VW];
        VSTORE(acc[j][v], tmp);
        for (int i = 0; i < VW; ++i) {
          const int m = v * VW + i;
          if (mb + m < M) c[m] = alpha * tmp[i] + (beta != 0.0f ? beta * c[m] : 0.0f);
        }
      }
    }
  }
}

__kernel __attribute__((reqd_work_group_size(RTSM, RTSN, 1))) void gemm_tiled(
    const int M, const int N, const int K, const float alpha, const float beta,
    __global const float* restrict A, const int lda, __global const float* restrict B,
    const int ldb, __global float* C, const int ldc) {
  __local float Al[TSK * TSM];
  __local float Bl[TSK * TSN];
  gemm_tiled_body(M, N, K, alpha, beta, A, lda, B, ldb, C, ldc, Al, Bl);
}

// A batch of GEMMs of the same shape, one per group index b along the third dimension (used by
// the OpenCL convolutions): A + a_off + b * sa, B + b_off + (b % gb) * sb, C + c_off + b * sc.
__kernel __attribute__((reqd_work_group_size(RTSM, RTSN, 1))) void gemm_tiled_batched(
    const int M, const int N, const int K, const float alpha, const float beta,
    __global const float* restrict A, const long a_off, const int lda, const long sa,
    __global const float* restrict B, const long b_off, const int ldb, const long sb, const int gb,
    __global float* C, const long c_off, const int ldc, const long sc) {
  __local float Al[TSK * TSM];
  __local float Bl[TSK * TSN];
  const long b = get_group_id(2);
  gemm_tiled_body(M, N, K, alpha, beta, A + a_off + b * sa, lda, B + b_off + (b % gb) * sb, ldb,
                  C + c_off + b * sc, ldc, Al, Bl);
}

// Out (cols x rows, leading dimension ldo) = X^T, X column-major rows x cols with leading
// dimension ldx; XT x XT work-items per group through a local tile (used to turn op(A) = A^T into
// a plain A once per run instead of transposing in every tile).
#ifndef XT
#define XT 32
#endif
__kernel __attribute__((reqd_work_group_size(XT, XT, 1))) void transpose(
    const int rows, const int cols, __global const float* restrict X, const int ldx,
    __global float* restrict Out, const int ldo) {
  __local float t[XT][XT + 1];
  const int lr = get_local_id(0), lc = get_local_id(1);
  const int r0 = get_group_id(0) * XT, c0 = get_group_id(1) * XT;
  if (r0 + lr < rows && c0 + lc < cols) t[lc][lr] = X[(size_t)(c0 + lc) * ldx + r0 + lr];
  barrier(CLK_LOCAL_MEM_FENCE);
  // Out(c, r) = X(r, c): work-item (lr, lc) now writes row c0 + lr of Out, column r0 + lc.
  if (c0 + lr < cols && r0 + lc < rows) Out[(size_t)(r0 + lc) * ldo + c0 + lr] = t[lr][lc];
}
