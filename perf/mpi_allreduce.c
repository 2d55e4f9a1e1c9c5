/* Times MPI_Allreduce (float sum, out of place) over a size sweep the way weft-perf times
 * weftAllReduce, so that perf/compare-allreduce can put the two side by side.
 *
 *   mpi-allreduce-perf [-b minBytes] [-e maxBytes] [-f factor] [-n iters] [-w warmup]
 *
 * Prints one line per size: "size_bytes time_us", the time per call averaged over the
 * iterations and then over the ranks (as weft-perf's default -a 1). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parseSize(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  switch (end && *end ? *end : 0) {
    case 'K': case 'k': v *= 1024.0; break;
    case 'M': case 'm': v *= 1024.0 * 1024.0; break;
    case 'G': case 'g': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
  }
  return (size_t)v;
}

int main(int argc, char** argv) {
  size_t minBytes = 8, maxBytes = 256u << 20;
  int factor = 2, iters = 20, warmup = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-b")) minBytes = parseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "-e")) maxBytes = parseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "-f")) factor = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-n")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) warmup = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "mpi-allreduce-perf: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t maxCount = maxBytes / sizeof(float);
  float* send = malloc((maxCount ? maxCount : 1) * sizeof(float));
  float* recv = malloc((maxCount ? maxCount : 1) * sizeof(float));
  for (size_t i = 0; i < maxCount; ++i) send[i] = (float)(rank + 1);
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= (size_t)factor) {
    const int count = (int)(bytes / sizeof(float));
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double perCall = (MPI_Wtime() - t0) / iters * 1e6, sum = 0;
    MPI_Allreduce(&perCall, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (count > 0 && recv[count - 1] != (float)(size * (size + 1) / 2)) {
      fprintf(stderr, "mpi-allreduce-perf: wrong result at %zu bytes\n", bytes);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) printf("%zu %.2f\n", (size_t)count * sizeof(float), sum / size);
    if (factor < 2) break;
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
