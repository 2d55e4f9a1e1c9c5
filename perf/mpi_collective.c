/* Times one MPI collective (float32, sum where it reduces, out of place) over a size sweep the way
 * weft-perf times weft, so that perf/compare can put MPI and weft side by side. Built against
 * Open MPI (mpi-collective-perf) and, when installed, MPICH (mpich-collective-perf).
 *
 *   mpi-collective-perf <collective> [-b minBytes] [-e maxBytes] [-f factor] [-n iters]
 *                       [-w warmup] [-r root]
 *
 * Collectives: all_reduce all_gather reduce_scatter broadcast alltoall (MPI_Allreduce,
 * MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast, MPI_Alltoall). Sizes follow nccl-tests:
 * for all_gather, reduce_scatter and alltoall the size is the whole buffer and each rank's block
 * is size / 4 / nranks floats, so sizes shrink to multiples of 4 * nranks, as weft-perf prints
 * them. MPI_Bcast has one buffer: it broadcasts the receive buffer (the root's holds the data).
 *
 * Per size: -w warm-up calls, a barrier, then -n timed calls; the time per call is averaged over
 * the calls and then over the ranks (weft-perf's default -a 1). One element of the last result is
 * verified. Rank 0 prints "# ..." comment lines and one line per size: "size_bytes time_us".
 * Exit status: 0, 1 on a wrong result, 2 on a bad command line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAlltoall };
static const char* const kNames[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                     "alltoall"};

static size_t parseSize(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  switch (end && *end ? *end : 0) {
    case 'K':
    case 'k': v *= 1024.0; break;
    case 'M':
    case 'm': v *= 1024.0 * 1024.0; break;
    case 'G':
    case 'g': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
  }
  return (size_t)v;
}

static int usage(const char* why) {
  fprintf(stderr,
          "mpi-collective-perf: %s\nusage: mpi-collective-perf all_reduce|all_gather|"
          "reduce_scatter|broadcast|alltoall [-b min] [-e max] [-f factor] [-n iters] "
          "[-w warmup] [-r root]\n",
          why);
  return 2;
}

/* The block each rank contributes or receives: the count argument of the call. */
static size_t blockCount(enum Collective c, size_t bytes, int nranks) {
  const size_t count = bytes / sizeof(float);
  return (c == kAllGather || c == kReduceScatter || c == kAlltoall) ? count / (size_t)nranks
                                                                    : count;
}

/* Fills the send buffer (and the broadcast root's buffer) so that one element of the result is
 * known: see expected(). Values are small integers, exact in float. */
static void fill(enum Collective c, float* send, float* recv, size_t block, int rank, int nranks,
                 int root) {
  if (c == kBroadcast) {
    for (size_t i = 0; i < block; ++i) recv[i] = rank == root ? (float)(root + 1) : 0.0f;
    return;
  }
  const size_t sendCount = (c == kAllReduce || c == kAllGather) ? block : block * (size_t)nranks;
  for (size_t i = 0; i < sendCount; ++i) send[i] = (float)(rank + 1);
  if (c == kAlltoall) {
    for (int j = 0; j < nranks; ++j) {
      for (size_t i = 0; i < block; ++i) send[(size_t)j * block + i] = (float)(rank * nranks + j);
    }
  }
}

/* The expected last element of this rank's result, and how many elements the result has. */
static float expected(enum Collective c, int rank, int nranks, int root) {
  switch (c) {
    case kAllReduce:
    case kReduceScatter: return (float)(nranks * (nranks + 1) / 2);
    case kAllGather: return (float)nranks; /* the last block comes from rank nranks-1 */
    case kBroadcast: return (float)(root + 1);
    case kAlltoall: return (float)((nranks - 1) * nranks + rank); /* rank n-1's block for us */
  }
  return 0;
}

static size_t resultCount(enum Collective c, size_t block, int nranks) {
  return (c == kAllGather || c == kAlltoall) ? block * (size_t)nranks : block;
}

static void run(enum Collective c, float* send, float* recv, size_t block, int root) {
  const int n = (int)block;
  switch (c) {
    case kAllReduce: MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case kAllGather: MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD); break;
    case kReduceScatter:
      MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case kBroadcast: MPI_Bcast(recv, n, MPI_FLOAT, root, MPI_COMM_WORLD); break;
    case kAlltoall: MPI_Alltoall(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD); break;
  }
}

int main(int argc, char** argv) {
  if (argc < 2) return usage("no collective given");
  int coll = -1;
  for (int i = 0; i < (int)(sizeof kNames / sizeof kNames[0]); ++i) {
    if (!strcmp(argv[1], kNames[i])) coll = i;
  }
  if (coll < 0) return usage("unknown collective");
  const enum Collective c = (enum Collective)coll;
  size_t minBytes = 8, maxBytes = (size_t)32 << 20;
  int factor = 2, iters = 20, warmup = 5, root = 0;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return usage("a flag lacks its value");
    if (!strcmp(argv[i], "-b"))
      minBytes = parseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "-e"))
      maxBytes = parseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "-f"))
      factor = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-n"))
      iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w"))
      warmup = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-r"))
      root = atoi(argv[i + 1]);
    else
      return usage("unknown flag");
  }
  if (iters < 1 || warmup < 0 || factor < 1 || minBytes > maxBytes) return usage("bad value");

  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (root < 0 || root >= nranks) {
    if (rank == 0) fprintf(stderr, "mpi-collective-perf: root %d out of range\n", root);
    MPI_Finalize();
    return 2;
  }
  /* Buffers for the largest size: the whole buffer on both sides covers every collective. */
  const size_t maxCount = maxBytes / sizeof(float) + 1;
  float* send = malloc(maxCount * sizeof(float));
  float* recv = malloc(maxCount * sizeof(float));
  if (!send || !recv) {
    fprintf(stderr, "mpi-collective-perf: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(send, 0, maxCount * sizeof(float));
  memset(recv, 0, maxCount * sizeof(float));
  if (rank == 0) {
    printf("# mpi-collective-perf %s float32%s, %d ranks, %d warm-up + %d timed calls per size\n",
           kNames[c], (c == kAllReduce || c == kReduceScatter) ? " sum" : "", nranks, warmup,
           iters);
    printf("# size_bytes time_us\n");
  }
  int status = 0;
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= (size_t)factor) {
    const size_t block = blockCount(c, bytes, nranks);
    const size_t shownBytes = (c == kAllGather || c == kReduceScatter || c == kAlltoall)
                                  ? block * (size_t)nranks * sizeof(float)
                                  : block * sizeof(float);
    fill(c, send, recv, block, rank, nranks, root);
    for (int i = 0; i < warmup; ++i) run(c, send, recv, block, root);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) run(c, send, recv, block, root);
    const double perCall = (MPI_Wtime() - t0) / iters * 1e6;
    double sum = 0;
    MPI_Allreduce(&perCall, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const size_t results = resultCount(c, block, nranks);
    int wrong = results > 0 && recv[results - 1] != expected(c, rank, nranks, root);
    if (wrong) {
      fprintf(stderr,
              "mpi-collective-perf: rank %d: %s at %zu bytes: last element %g, expected %g\n", rank,
              kNames[c], shownBytes, (double)recv[results - 1],
              (double)expected(c, rank, nranks, root));
    }
    int anyWrong = 0;
    MPI_Allreduce(&wrong, &anyWrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anyWrong) status = 1;
    if (rank == 0) {
      printf("%zu %.2f\n", shownBytes, sum / nranks);
      fflush(stdout);
    }
    if (factor < 2) break;
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return status;
}
