/* mpi_allreduce_check: an MPI program that uses weft next to MPI and checks that weft's
 * allreduce gives exactly what MPI_Allreduce gives, for several sizes, types and operators.
 *
 *   mpirun -np 4 ./mpi_allreduce_check               # weft communicator from MPI_COMM_WORLD
 *   mpirun -np 4 ./mpi_allreduce_check --from-env    # ... from mpirun's environment (PMIx)
 *
 * Inputs are small integers, so every partial sum and product is exact in every type and the
 * two libraries must agree bit for bit whatever order they reduce in. Exit status 0 when every
 * case matches on every rank. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "weft_mpi.h"

typedef struct {
  const char* name;
  weftDataType_t weft;
  MPI_Datatype mpi;
  size_t size;
} Type;

typedef struct {
  const char* name;
  weftRedOp_t weft;
  MPI_Op mpi;
} Op;

/* Element i of rank r's input, as a small integer: products use +-1 with a rare 2. */
static long long inputValue(int r, size_t i, int product) {
  if (product) return ((i + (size_t)r) % 7 == 0) ? 2 : (((i * 3 + (size_t)r) % 5 == 0) ? -1 : 1);
  return (long long)((i * 7 + (size_t)r * 13) % 23) - 11;
}

static void fill(void* buffer, const Type* t, size_t count, int rank, int product) {
  for (size_t i = 0; i < count; ++i) {
    const long long v = inputValue(rank, i, product);
    if (t->weft == weftInt32) ((int32_t*)buffer)[i] = (int32_t)v;
    else if (t->weft == weftInt64) ((int64_t*)buffer)[i] = (int64_t)v;
    else if (t->weft == weftFloat32) ((float*)buffer)[i] = (float)v;
    else ((double*)buffer)[i] = (double)v;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int fromEnv = argc > 1 && strcmp(argv[1], "--from-env") == 0;

  weftComm_t comm = NULL;
  weftResult_t r = fromEnv ? weftCommInitFromEnv(&comm, NULL)
                           : weftCommInitFromMPI(MPI_COMM_WORLD, &comm, NULL);
  if (r != weftSuccess) {
    fprintf(stderr, "rank %d: %s: %s: %s\n", rank,
            fromEnv ? "weftCommInitFromEnv" : "weftCommInitFromMPI", weftGetErrorString(r),
            weftGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int weftRank = -1, weftSize = 0;
  weftCommUserRank(comm, &weftRank);
  weftCommCount(comm, &weftSize);
  if (weftRank != rank || weftSize != size) {
    fprintf(stderr, "rank %d of %d: weft says rank %d of %d\n", rank, size, weftRank, weftSize);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  const Type types[] = {{"int32", weftInt32, MPI_INT32_T, 4},
                        {"int64", weftInt64, MPI_INT64_T, 8},
                        {"float", weftFloat32, MPI_FLOAT, 4},
                        {"double", weftFloat64, MPI_DOUBLE, 8}};
  const Op ops[] = {{"sum", weftSum, MPI_SUM},
                    {"prod", weftProd, MPI_PROD},
                    {"max", weftMax, MPI_MAX},
                    {"min", weftMin, MPI_MIN}};
  const size_t counts[] = {1, 7, 1000, 65536, (size_t)1 << 20};
  const size_t maxBytes = ((size_t)1 << 20) * 8;
  void* in = malloc(maxBytes);
  void* viaMpi = malloc(maxBytes);
  void* viaWeft = malloc(maxBytes);
  if (!in || !viaMpi || !viaWeft) MPI_Abort(MPI_COMM_WORLD, 1);

  int cases = 0, mismatches = 0;
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c)
    for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t)
      for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o) {
        const size_t count = counts[c];
        fill(in, &types[t], count, rank, ops[o].weft == weftProd);
        MPI_Allreduce(in, viaMpi, (int)count, types[t].mpi, ops[o].mpi, MPI_COMM_WORLD);
        memset(viaWeft, 0xa5, count * types[t].size);
        r = weftAllReduce(in, viaWeft, count, types[t].weft, ops[o].weft, comm, NULL);
        if (r != weftSuccess) {
          fprintf(stderr, "rank %d: weftAllReduce: %s: %s\n", rank, weftGetErrorString(r),
                  weftGetLastError(comm));
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        ++cases;
        if (memcmp(viaMpi, viaWeft, count * types[t].size) != 0) {
          ++mismatches;
          fprintf(stderr, "rank %d: %zu x %s %s differs from MPI_Allreduce\n", rank, count,
                  types[t].name, ops[o].name);
        }
      }

  int total = 0;
  MPI_Allreduce(&mismatches, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("mpi_allreduce_check: %d ranks, %d cases (%s): %s\n", size, cases,
           fromEnv ? "weftCommInitFromEnv" : "weftCommInitFromMPI",
           total == 0 ? "every result equals MPI_Allreduce's" : "MISMATCHES");
  free(in);
  free(viaMpi);
  free(viaWeft);
  weftCommDestroy(comm);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
