/* weftrun-smoke: one job of the real library under weftrun, in plain C99. Every rank joins
 * through the launcher's environment, sums 1000 floats of value rank+1 with the others and
 * checks each element equals n(n+1)/2. Exit 0 on success; on failure the rank says why. */
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#define COUNT 1000

static int failed(const char* what, weftResult_t result, weftComm_t comm) {
  fprintf(stderr, "weftrun-smoke: %s: %s: %s\n", what, weftGetErrorString(result),
          weftGetLastError(comm));
  return 1;
}

int main(void) {
  weftComm_t comm = NULL;
  weftResult_t result = weftCommInitFromEnv(&comm, NULL);
  if (result != weftSuccess) return failed("weftCommInitFromEnv", result, NULL);

  int rank = -1, nranks = 0;
  if ((result = weftCommUserRank(comm, &rank)) != weftSuccess)
    return failed("weftCommUserRank", result, comm);
  if ((result = weftCommCount(comm, &nranks)) != weftSuccess)
    return failed("weftCommCount", result, comm);

  float* data = malloc(COUNT * sizeof *data);
  if (data == NULL) {
    fprintf(stderr, "weftrun-smoke: rank %d: out of memory\n", rank);
    return 1;
  }
  for (size_t i = 0; i < COUNT; ++i) data[i] = (float)(rank + 1);
  result = weftAllReduce(data, data, COUNT, weftFloat32, weftSum, comm, NULL);
  if (result != weftSuccess) return failed("weftAllReduce", result, comm);

  const float expected = (float)(nranks * (nranks + 1) / 2);
  int wrong = 0;
  for (size_t i = 0; i < COUNT; ++i) {
    if (data[i] != expected) {
      if (wrong == 0)
        fprintf(stderr, "weftrun-smoke: rank %d: element %zu is %g, expected %g\n", rank, i,
                (double)data[i], (double)expected);
      ++wrong;
    }
  }
  free(data);
  if (wrong != 0) {
    fprintf(stderr, "weftrun-smoke: rank %d: %d of %d elements wrong\n", rank, wrong, COUNT);
    return 1;
  }
  if ((result = weftCommDestroy(comm)) != weftSuccess)
    return failed("weftCommDestroy", result, NULL);
  printf("weftrun-smoke: rank %d of %d: allreduce correct\n", rank, nranks);
  return 0;
}
