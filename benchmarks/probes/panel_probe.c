// panel_probe.c - how fast the CPU prefill's P·V register block can run
// on this host, by the layout of its operands (AVX2 + FMA).
//
// The block is the one attn-cpu-vectorize-matmul emits for an f32 prefill
// step: 6 rows x 16 columns (12 accumulators), per k one row of B in two
// vector loads and six broadcasts of A. C = 60 x 128 (10 row blocks, 8
// column blocks), K = 128 (a key block); A and B in one of four layouts:
//   0: as the compiler has them: A = Pᵀ [K][64] (row stride 256 bytes), B =
//      a V tile [K][128] (row stride 512 bytes)
//   1: both packed as GotoBLAS panels: A [row block][K][6], B [column
//      block][K][16] (each block's operand contiguous)
//   2: A packed only
//   3: B packed only
// `tiles` distinct B tiles are cycled (1: B stays in L2; 64: 4 MiB, B comes
// from L3 as a fresh V tile does). The packing itself is not timed. The
// figure is vector FMAs per second and its fraction of `peak` (the
// register-only FMA rate of one core, measured with `--peak`).
//
//   clang -O3 -mavx2 -mfma benchmarks/probes/panel_probe.c -o /tmp/probe
//   /tmp/probe --peak; for m in 0 1 2 3; do /tmp/probe $m 64; done
//   /tmp/probe 0 64 80   (A's rows 80 floats apart instead of 64)
//
// Not part of make check; results-peers.md gives what it measured.

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { K = 128, N = 128, M = 60 };

// Row stride of the unpacked A in floats (64: the compiler's Pᵀ before
// attn-decompose-online padded it; 80: since).
static int LDA = 64;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define FMA(c, a, b) c = _mm256_fmadd_ps(a, b, c)

// C[6][16] += A[k][0..6] (stride sa) x B[k][0..16] (stride sb), k < K.
__attribute__((noinline)) static void block(const float *A, int sa,
                                            const float *B, int sb, float *C) {
  __m256 c00 = _mm256_load_ps(C), c01 = _mm256_load_ps(C + 8);
  __m256 c10 = _mm256_load_ps(C + N), c11 = _mm256_load_ps(C + N + 8);
  __m256 c20 = _mm256_load_ps(C + 2 * N), c21 = _mm256_load_ps(C + 2 * N + 8);
  __m256 c30 = _mm256_load_ps(C + 3 * N), c31 = _mm256_load_ps(C + 3 * N + 8);
  __m256 c40 = _mm256_load_ps(C + 4 * N), c41 = _mm256_load_ps(C + 4 * N + 8);
  __m256 c50 = _mm256_load_ps(C + 5 * N), c51 = _mm256_load_ps(C + 5 * N + 8);
  for (int k = 0; k < K; k++) {
    __m256 b0 = _mm256_load_ps(B + k * sb), b1 = _mm256_load_ps(B + k * sb + 8);
    __m256 a;
    a = _mm256_broadcast_ss(A + k * sa + 0), FMA(c00, a, b0), FMA(c01, a, b1);
    a = _mm256_broadcast_ss(A + k * sa + 1), FMA(c10, a, b0), FMA(c11, a, b1);
    a = _mm256_broadcast_ss(A + k * sa + 2), FMA(c20, a, b0), FMA(c21, a, b1);
    a = _mm256_broadcast_ss(A + k * sa + 3), FMA(c30, a, b0), FMA(c31, a, b1);
    a = _mm256_broadcast_ss(A + k * sa + 4), FMA(c40, a, b0), FMA(c41, a, b1);
    a = _mm256_broadcast_ss(A + k * sa + 5), FMA(c50, a, b0), FMA(c51, a, b1);
  }
  _mm256_store_ps(C, c00), _mm256_store_ps(C + 8, c01);
  _mm256_store_ps(C + N, c10), _mm256_store_ps(C + N + 8, c11);
  _mm256_store_ps(C + 2 * N, c20), _mm256_store_ps(C + 2 * N + 8, c21);
  _mm256_store_ps(C + 3 * N, c30), _mm256_store_ps(C + 3 * N + 8, c31);
  _mm256_store_ps(C + 4 * N, c40), _mm256_store_ps(C + 4 * N + 8, c41);
  _mm256_store_ps(C + 5 * N, c50), _mm256_store_ps(C + 5 * N + 8, c51);
}

// Vector FMAs per second of 12 independent register-only chains, in
// assembly: written in C (12 chains of _mm256_fmadd_ps), clang kept 11
// FMAs in the loop for the 12 counted and the figure read 9% high (6.99
// against 6.41 G/s on the AVX2 host).
static double peak(void) {
  long n = 100000000;
  double best = 1e9;
  for (int t = 0; t < 3; t++) {
    double t0 = now();
    __asm__ volatile(
        "vxorps %%ymm0, %%ymm0, %%ymm0\n vxorps %%ymm1, %%ymm1, %%ymm1\n"
        "vxorps %%ymm2, %%ymm2, %%ymm2\n vxorps %%ymm3, %%ymm3, %%ymm3\n"
        "vxorps %%ymm4, %%ymm4, %%ymm4\n vxorps %%ymm5, %%ymm5, %%ymm5\n"
        "vxorps %%ymm6, %%ymm6, %%ymm6\n vxorps %%ymm7, %%ymm7, %%ymm7\n"
        "vxorps %%ymm8, %%ymm8, %%ymm8\n vxorps %%ymm9, %%ymm9, %%ymm9\n"
        "vxorps %%ymm10, %%ymm10, %%ymm10\n vxorps %%ymm11, %%ymm11, %%ymm11\n"
        "vxorps %%ymm12, %%ymm12, %%ymm12\n vxorps %%ymm13, %%ymm13, %%ymm13\n"
        "1:\n"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm0\n vfmadd231ps %%ymm12, %%ymm13, %%ymm1\n"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm2\n vfmadd231ps %%ymm12, %%ymm13, %%ymm3\n"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm4\n vfmadd231ps %%ymm12, %%ymm13, %%ymm5\n"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm6\n vfmadd231ps %%ymm12, %%ymm13, %%ymm7\n"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm8\n vfmadd231ps %%ymm12, %%ymm13, %%ymm9\n"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm10\n vfmadd231ps %%ymm12, %%ymm13, %%ymm11\n"
        "dec %0\n jnz 1b\n"
        : "+r"(n)
        :
        : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13");
    n = 100000000;
    double dt = now() - t0;
    best = dt < best ? dt : best;
  }
  return n * 12 / best;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--peak")) {
    printf("peak: %.2f G vector FMAs/s\n", peak() / 1e9);
    return 0;
  }
  if (argc < 3 || argc > 4 || atoi(argv[1]) < 0 || atoi(argv[1]) > 3 ||
      atoi(argv[2]) < 1 || (argc == 4 && atoi(argv[3]) < 64)) {
    fprintf(stderr,
            "usage: %s --peak | %s LAYOUT(0-3) TILES(>=1) [A_STRIDE(>=64)]\n",
            argv[0], argv[0]);
    return 2;
  }
  if (argc == 4)
    LDA = atoi(argv[3]);
  int layout = atoi(argv[1]), tiles = atoi(argv[2]);
  size_t tile = (size_t)K * N;
  float *A = aligned_alloc(64, K * LDA * 4), *C = aligned_alloc(64, M * N * 4);
  float *B = aligned_alloc(64, tiles * tile * 4);
  if (!A || !B || !C)
    return 1;
  for (int i = 0; i < K * LDA; i++)
    A[i] = 1e-3f * (i % 7);
  memset(C, 0, M * N * 4);
  for (size_t i = 0; i < tiles * tile; i++)
    B[i] = 1e-3f * (i % 5);
  int packA = layout == 1 || layout == 2, packB = layout == 1 || layout == 3;
  int reps = 20000;
  double best = 1e9;
  for (int t = 0; t < 5; t++) {
    double t0 = now();
    for (int r = 0; r < reps; r++) {
      const float *bt = B + (r % tiles) * tile;
      for (int r0 = 0; r0 < M; r0 += 6)
        for (int c0 = 0; c0 < N; c0 += 16)
          block(packA ? A + r0 * K : A + r0, packA ? 6 : LDA,
                packB ? bt + c0 * K : bt + c0, packB ? 16 : N, C + r0 * N + c0);
    }
    double dt = now() - t0;
    best = dt < best ? dt : best;
  }
  double fmas = (double)reps * M * N * K / 8;
  printf("layout %d, %d B tiles: %.2f G vector FMAs/s\n", layout, tiles,
         fmas / best / 1e9);
  return C[5] > 1e30f;
}
