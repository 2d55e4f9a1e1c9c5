/* split-time: what weftCommSplit with splitShare=1 saves. One rank of a job launched like any
 * weft program (weftCommInitFromEnv). REPS times, alternating splitShare=0 and 1, every rank
 * splits the world into one child (same color, same order), runs one 8-byte allreduce on it
 * (a fresh worker connects on first use) and destroys it. Rank 0 prints the median time of
 * split + first allreduce, and of the destroy, for each setting, and their ratios.
 *
 *   split-time [REPS]   (default 10) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "weft.h"

#define MAX_REPS 1000

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 10;
  if (reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "split-time: REPS must be 1..%d\n", MAX_REPS);
    return 2;
  }
  weftComm_t world = NULL;
  if (weftCommInitFromEnv(&world, NULL) != weftSuccess) {
    fprintf(stderr, "split-time: weftCommInitFromEnv: %s\n", weftGetLastError(NULL));
    return 1;
  }
  int rank = -1, nranks = 0;
  weftCommUserRank(world, &rank);
  weftCommCount(world, &nranks);
  static double create[2][MAX_REPS], destroy[2][MAX_REPS];
  for (int rep = 0; rep < reps; ++rep) {
    for (int share = 0; share < 2; ++share) {
      weftConfig_t config = WEFT_CONFIG_INITIALIZER;
      config.splitShare = share;
      weftComm_t child = NULL;
      double x = 1.0;
      /* Every rank starts together: a barrier-like allreduce on the world. */
      if (weftAllReduce(&x, &x, 1, weftFloat64, weftSum, world, NULL) != weftSuccess) goto failed;
      const double t0 = now_ms();
      if (weftCommSplit(world, 0, rank, &child, &config) != weftSuccess) goto failed;
      if (weftAllReduce(&x, &x, 1, weftFloat64, weftSum, child, NULL) != weftSuccess) goto failed;
      const double t1 = now_ms();
      if (weftCommDestroy(child) != weftSuccess) goto failed;
      create[share][rep] = t1 - t0;
      destroy[share][rep] = now_ms() - t1;
    }
  }
  if (rank == 0) {
    const double c0 = median(create[0], reps), c1 = median(create[1], reps);
    const double d0 = median(destroy[0], reps), d1 = median(destroy[1], reps);
    printf("# split-time: %d ranks, %d reps each, alternating; medians in ms\n", nranks, reps);
    printf("# %-12s %14s %14s\n", "splitShare", "split+first", "destroy");
    printf("  %-12d %14.2f %14.2f\n", 0, c0, d0);
    printf("  %-12d %14.2f %14.2f\n", 1, c1, d1);
    printf("  %-12s %14.2f %14.2f\n", "ratio 1/0", c1 / c0, d1 / d0);
  }
  weftCommDestroy(world);
  return 0;
failed:
  fprintf(stderr, "split-time: rank %d: %s\n", rank, weftGetLastError(world));
  return 1;
}
