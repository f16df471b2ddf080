// paged_read_probe.c - how fast this host reads a paged KV cache in the
// order the CPU paged decode kernel reads it, with no arithmetic: the
// bound a paged decode step can reach here.
//
// Cache [pages][16 keys][8 KV heads][128] f32 for K and for V (17043
// pages, 2.1 GiB: the bench_decode paged case), two threads, each reading
// half of a block table. PATTERN 0: head-major, as the kernel reads a
// block (for each head, its 16 rows 4 KiB apart, K then V); 1: address
// order (each block's 64 KiB of K, then of V). PF 1: each head step
// prefetches (prefetcht2) its 8 KiB share of the next block, as the
// kernel does. A third argument shuffles the table (as bench_decode's).
//
//   clang -O2 -mavx2 -fopenmp benchmarks/probes/paged_read_probe.c -o /tmp/rd
//   for p in 0 1; do for f in 0 1; do /tmp/rd $p $f; /tmp/rd $p $f shuffled;
//   done; done
//
// Compare with `attn-run --read-bandwidth 512` run next to it. Not part of
// make check; results-decode.md gives what it measured.
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
enum { BS = 16, H = 8, D = 128, BLK = BS * H * D };
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
// Head h's 16 rows of a block (D floats, H·D apart), summed into s0, s1.
static void readHead(const float *block, int h, __m256 *s0, __m256 *s1) {
  for (int r = 0; r < BS; r++)
    for (int c = 0; c < D; c += 16) {
      const float *p = block + r * H * D + h * D + c;
      *s0 = _mm256_add_ps(*s0, _mm256_load_ps(p));
      *s1 = _mm256_add_ps(*s1, _mm256_load_ps(p + 8));
    }
}

// Head step h's share of the next block: BS·D floats from h·BS·D.
static void prefetchShare(const float *next, int h) {
  for (int l = 0; l < BS * D; l += 16)
    _mm_prefetch((const char *)(next + h * BS * D + l), _MM_HINT_T2);
}

// A whole block in address order, summed into s0, s1; with `next`, each
// head step's share of the next block prefetched as its share is read.
static void readBlock(const float *block, const float *next, __m256 *s0,
                      __m256 *s1) {
  for (int i = 0; i < BLK; i += 16) {
    *s0 = _mm256_add_ps(*s0, _mm256_load_ps(block + i));
    *s1 = _mm256_add_ps(*s1, _mm256_load_ps(block + i + 8));
    if (next && i % (BS * D) == 0)
      prefetchShare(next, i / (BS * D));
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PATTERN(0|1) PF(0|1) [shuffled]\n", argv[0]);
    return 2;
  }
  int pattern = atoi(argv[1]), pf = atoi(argv[2]);
  long pages = 17043;
  int seqblocks = pages / 2;
  float *K = aligned_alloc(4096, pages * BLK * 4),
        *V = aligned_alloc(4096, pages * BLK * 4);
  int *bt = malloc(pages * 4);
  if (!K || !V || !bt) {
    fprintf(stderr, "out of memory (2.1 GiB of cache needed)\n");
    return 1;
  }
  for (long i = 0; i < pages * BLK; i++) {
    K[i] = 1e-6f * (i & 7);
    V[i] = K[i];
  }
  for (int i = 0; i < pages; i++)
    bt[i] = i;
  if (argc > 3)
    for (int i = pages - 1; i > 0; i--) {
      int j = rand() % (i + 1);
      int t = bt[i];
      bt[i] = bt[j];
      bt[j] = t;
    }
  double best = 1e9;
  float tot = 0;
  for (int rep = 0; rep < 7; rep++) {
    double t0 = now();
#pragma omp parallel num_threads(2) reduction(+ : tot)
    {
      int t = omp_get_thread_num();
      int *tb = bt + t * seqblocks;
      __m256 s0 = _mm256_setzero_ps(), s1 = s0;
      for (int b = 0; b < seqblocks; b++) {
        const float *k = K + (long)tb[b] * BLK, *v = V + (long)tb[b] * BLK;
        const float *nk = K + (long)tb[b + 1 < seqblocks ? b + 1 : b] * BLK,
                    *nv = V + (long)tb[b + 1 < seqblocks ? b + 1 : b] * BLK;
        if (pattern == 0) { // head-major (kernel order)
          for (int h = 0; h < H; h++) {
            readHead(k, h, &s0, &s1);
            if (pf)
              prefetchShare(nk, h);
            readHead(v, h, &s0, &s1);
            if (pf)
              prefetchShare(nv, h);
          }
        } else { // address order
          readBlock(k, pf ? nk : NULL, &s0, &s1);
          readBlock(v, pf ? nv : NULL, &s0, &s1);
        }
      }
      __m256 s = _mm256_add_ps(s0, s1);
      tot += s[0] + s[3];
    }
    double dt = now() - t0;
    if (dt < best)
      best = dt;
  }
  double bytes = 2.0 * 2 * seqblocks * (double)BLK * 4;
  printf("pattern %d pf %d %s: %.1f GB/s\n", pattern, pf,
         argc > 3 ? "random" : "seq", bytes / best / 1e9);
  return tot == 1234.5f;
}
