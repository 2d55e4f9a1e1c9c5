/* Built against an installed weft (CMake package or pkg-config): one rank, one allreduce. */
#include <stdio.h>
#include <weft.h>

int main(void) {
  int version = 0;
  weftUniqueId id;
  weftComm_t comm;
  float x[4] = {1, 2, 3, 4};
  if (weftGetVersion(&version) != weftSuccess || weftGetUniqueId(&id) != weftSuccess ||
      weftCommInitRank(&comm, 1, id, 0) != weftSuccess ||
      weftAllReduce(x, x, 4, weftFloat, weftSum, comm, NULL) != weftSuccess ||
      weftCommDestroy(comm) != weftSuccess) {
    fprintf(stderr, "consumer: %s\n", weftGetLastError(NULL));
    return 1;
  }
  printf("weft %d works: %g %g %g %g\n", version, x[0], x[1], x[2], x[3]);
  return x[3] == 4.0f ? 0 : 1;
}
