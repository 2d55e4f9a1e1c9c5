/* weft-launch-probe: a plain weft program (no MPI) for every launcher weftCommInitFromEnv
 * understands. It creates two communicators from the environment (the second checks that
 * repeated rendezvous through PMIx or the store do not mix), sums rank+1 over 1000 floats on
 * each, checks n(n+1)/2 everywhere, and prints one line per rank. The number of ranks it must
 * find can be given as the first argument. Exit 0 on success. */
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#define COUNT 1000

static int failed(int rank, const char* what, weftResult_t result, weftComm_t comm) {
  fprintf(stderr, "weft-launch-probe: rank %d: %s: %s: %s\n", rank, what,
          weftGetErrorString(result), weftGetLastError(comm));
  return 1;
}

static int sumOnce(weftComm_t comm, int rank, int nranks) {
  float data[COUNT];
  for (size_t i = 0; i < COUNT; ++i) data[i] = (float)(rank + 1);
  weftResult_t result = weftAllReduce(data, data, COUNT, weftFloat32, weftSum, comm, NULL);
  if (result != weftSuccess) return failed(rank, "weftAllReduce", result, comm);
  const float expected = (float)(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < COUNT; ++i) {
    if (data[i] != expected) {
      fprintf(stderr, "weft-launch-probe: rank %d: element %zu is %g, expected %g\n", rank, i,
              (double)data[i], (double)expected);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  const int expectedRanks = argc > 1 ? atoi(argv[1]) : 0;
  weftComm_t comms[2] = {NULL, NULL};
  int rank = -1, nranks = 0;
  for (int c = 0; c < 2; ++c) {
    weftResult_t result = weftCommInitFromEnv(&comms[c], NULL);
    if (result != weftSuccess) return failed(rank, "weftCommInitFromEnv", result, NULL);
    if ((result = weftCommUserRank(comms[c], &rank)) != weftSuccess)
      return failed(rank, "weftCommUserRank", result, comms[c]);
    if ((result = weftCommCount(comms[c], &nranks)) != weftSuccess)
      return failed(rank, "weftCommCount", result, comms[c]);
  }
  if (expectedRanks > 0 && nranks != expectedRanks) {
    fprintf(stderr, "weft-launch-probe: rank %d: %d ranks, expected %d\n", rank, nranks,
            expectedRanks);
    return 1;
  }
  for (int c = 0; c < 2; ++c)
    if (sumOnce(comms[c], rank, nranks) != 0) return 1;
  for (int c = 0; c < 2; ++c) {
    weftResult_t result = weftCommDestroy(comms[c]);
    if (result != weftSuccess) return failed(rank, "weftCommDestroy", result, NULL);
  }
  printf("weft-launch-probe: rank %d of %d: ok\n", rank, nranks);
  return 0;
}
