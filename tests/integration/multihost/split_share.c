/* weft-test-split-share: one rank of a job that splits its communicator with splitShare=1 (the
 * children may share the parent's UCX worker), splits the child again (the grandchild inherits
 * the child's config), checks allreduces on all three, destroys the parent first and checks the
 * child and grandchild again. Prints "rank R: split-share ok" and exits 0; exits 1 on any
 * failure or wrong sum. Joins through weftCommInitFromEnv. */
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#define COUNT (100 * 1000) /* 400 KB of floats: above WEFT_CHUNK_BYTES in the tests */

static float data[COUNT];

/* Sums rank + 1 + i % 7 over the communicator, at 1 and COUNT elements; 0 when right. */
static int check_sums(weftComm_t comm, const char* what, int world_rank) {
  int rank = -1, size = 0;
  weftCommUserRank(comm, &rank);
  weftCommCount(comm, &size);
  const size_t counts[] = {1, COUNT};
  for (int k = 0; k < 2; ++k) {
    for (size_t i = 0; i < counts[k]; ++i) data[i] = (float)(rank + 1 + (int)(i % 7));
    weftResult_t result = weftAllReduce(data, data, counts[k], weftFloat32, weftSum, comm, NULL);
    if (result != weftSuccess) {
      printf("rank %d: %s: allreduce of %zu floats failed: %s\n", world_rank, what, counts[k],
             weftGetLastError(comm));
      return 1;
    }
    for (size_t i = 0; i < counts[k]; ++i) {
      const float want = (float)(size * (size + 1) / 2 + size * (int)(i % 7));
      if (data[i] != want) {
        printf("rank %d: %s: element %zu of %zu is %g, expected %g\n", world_rank, what, i,
               counts[k], (double)data[i], (double)want);
        return 1;
      }
    }
  }
  return 0;
}

int main(void) {
  weftComm_t world = NULL, child = NULL, grandchild = NULL;
  if (weftCommInitFromEnv(&world, NULL) != weftSuccess) {
    fprintf(stderr, "weft-test-split-share: weftCommInitFromEnv: %s\n", weftGetLastError(NULL));
    return 1;
  }
  int rank = -1, child_rank = -1;
  weftCommUserRank(world, &rank);
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.splitShare = 1;
  if (weftCommSplit(world, rank % 2, rank, &child, &config) != weftSuccess ||
      weftCommUserRank(child, &child_rank) != weftSuccess ||
      weftCommSplit(child, 0, -child_rank, &grandchild, NULL) != weftSuccess) {
    printf("rank %d: split failed: %s\n", rank, weftGetLastError(world));
    return 1;
  }
  if (check_sums(world, "parent", rank) || check_sums(child, "child", rank) ||
      check_sums(grandchild, "grandchild", rank))
    return 1;
  if (weftCommDestroy(world) != weftSuccess) {
    printf("rank %d: destroying the parent failed: %s\n", rank, weftGetLastError(NULL));
    return 1;
  }
  if (check_sums(grandchild, "grandchild after the parent", rank) ||
      check_sums(child, "child after the parent", rank))
    return 1;
  if (weftCommDestroy(grandchild) != weftSuccess || weftCommDestroy(child) != weftSuccess) {
    printf("rank %d: destroying the children failed: %s\n", rank, weftGetLastError(NULL));
    return 1;
  }
  printf("rank %d: split-share ok\n", rank);
  return 0;
}
