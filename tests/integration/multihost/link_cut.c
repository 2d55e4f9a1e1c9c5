/* weft-test-link-cut: one rank of a job whose host link is cut while it runs. It joins through
 * weftCommInitFromEnv, sums rank+1 over COUNT floats in a loop (checking n(n+1)/2 each time),
 * prints "rank R: running" after the first few rounds so that the test cuts the link then, and
 * goes on until an allreduce fails. Exit 3 when one fails (the test expects that on every rank:
 * each side of the cut must turn it into an error), 1 on a wrong result or a failed set-up, 2
 * when nothing failed within the time limit (argument 1, seconds; default 90): a hang that the
 * communicator's deadline did not end.
 *
 * With argument 2, VICTIM, no link is cut: rank VICTIM leaves abruptly right after it says
 * "running" (_exit(3): no teardown, as a crash would), and every other rank must turn its
 * death into an error. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "weft.h"

#define COUNT (64 * 1024)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  const double limit = argc > 1 ? atof(argv[1]) : 90.0;
  const int victim = argc > 2 ? atoi(argv[2]) : -1;
  static float data[COUNT];
  weftComm_t comm = NULL;
  int rank = -1, nranks = 0;
  weftResult_t result = weftCommInitFromEnv(&comm, NULL);
  if (result != weftSuccess) {
    fprintf(stderr, "weft-test-link-cut: weftCommInitFromEnv: %s\n", weftGetLastError(NULL));
    return 1;
  }
  weftCommUserRank(comm, &rank);
  weftCommCount(comm, &nranks);
  const float expected = (float)(nranks * (nranks + 1) / 2);
  const double start = now();
  for (long round = 0;; ++round) {
    if (now() - start > limit) {
      printf("rank %d: no error after %ld rounds in %g s: the cut went unnoticed\n", rank, round,
             limit);
      return 2;
    }
    for (size_t i = 0; i < COUNT; ++i) data[i] = (float)(rank + 1);
    result = weftAllReduce(data, data, COUNT, weftFloat32, weftSum, comm, NULL);
    if (result != weftSuccess) {
      printf("rank %d: allreduce #%ld failed after %.1f s: %s: %s\n", rank, round, now() - start,
             weftGetErrorString(result), weftGetLastError(comm));
      fflush(stdout);
      weftCommAbort(comm);
      return 3;
    }
    for (size_t i = 0; i < COUNT; ++i) {
      if (data[i] != expected) {
        printf("rank %d: round %ld: element %zu is %g, expected %g\n", rank, round, i,
               (double)data[i], (double)expected);
        return 1;
      }
    }
    if (round == 20) {
      printf("rank %d: running\n", rank);
      fflush(stdout);
      if (rank == victim) _exit(3);
    }
  }
}
