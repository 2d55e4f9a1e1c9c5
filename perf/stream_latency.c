/* What one collective costs when each call is waited for: blocking (NULL stream) against a
 * call on a weft stream followed by weftStreamSynchronize, the way a framework issues an
 * operation and waits for its work. Run under weftrun (weftCommInitFromEnv):
 *   weftrun -n 2 build/bin/stream-latency [calls=20000] [bytes=8]
 * Rank 0 prints the slowest rank's microseconds per call for each form. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "weft.h"

static double nowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int check(weftResult_t r, const char* what) {
  if (r == weftSuccess) return 0;
  fprintf(stderr, "stream-latency: %s: %s\n", what, weftGetErrorString(r));
  return 1;
}

int main(int argc, char** argv) {
  const int calls = argc > 1 ? atoi(argv[1]) : 20000;
  const size_t bytes = argc > 2 ? (size_t)atoll(argv[2]) : 8;
  const size_t count = bytes / sizeof(float) > 0 ? bytes / sizeof(float) : 1;
  weftComm_t comm;
  weftStream_t stream;
  if (check(weftCommInitFromEnv(&comm, NULL), "weftCommInitFromEnv")) return 1;
  if (check(weftStreamCreate(&stream), "weftStreamCreate")) return 1;
  int rank = 0;
  weftCommUserRank(comm, &rank);
  float* in = calloc(count, sizeof(float));
  float* out = calloc(count, sizeof(float));
  if (!in || !out) return 1;
  const char* names[2] = {"blocking (NULL stream)", "stream + weftStreamSynchronize"};
  for (int form = 0; form < 2; ++form) {
    const weftStream_t s = form ? stream : NULL;
    double start = 0;
    for (int i = -1000; i < calls; ++i) { /* 1000 untimed calls first */
      if (i == 0) start = nowUs();
      if (check(weftAllReduce(in, out, count, weftFloat32, weftSum, comm, s), "weftAllReduce"))
        return 1;
      if (s && check(weftStreamSynchronize(s), "weftStreamSynchronize")) return 1;
    }
    double perCall = (nowUs() - start) / calls, slowest = 0;
    if (check(weftAllReduce(&perCall, &slowest, 1, weftFloat64, weftMax, comm, NULL),
              "weftAllReduce (max)"))
      return 1;
    if (rank == 0)
      printf("%zu B, %s: %.2f us per call\n", count * sizeof(float), names[form], slowest);
  }
  free(in);
  free(out);
  weftStreamDestroy(stream);
  weftCommDestroy(comm);
  return 0;
}
