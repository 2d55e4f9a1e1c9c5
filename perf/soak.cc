// Soak: many random collectives on one communicator, every result verified, with WEFT_CHECK=1,
// and the process's resident memory and open file descriptors compared before and after.
//
//   weftrun -n 4 soak [operations [warm-up [largest count]]]
//     (default 10000 measured after 2000 unmeasured, counts up to 100000; every rank draws the
//     same sequence)
//
// Each operation: a random collective, datatype, operator, count (0 to the largest, most
// small), root, in place on no rank, on every rank or on some ranks only (each rank's own
// choice, as NCCL allows), on a NULL stream or a host stream. Exits non-zero on a wrong result,
// a failed call, resident memory growing by 1 MiB or more, or a change in open descriptors.
#include <dirent.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "support/issue.hpp"

using namespace weft;
using namespace weft::testing;

namespace {

// Resident memory after handing free heap pages back to the kernel: what the process holds, not
// what malloc keeps cached from the test's own buffers (whose sizes vary with every operation).
long residentKiB() {
  malloc_trim(0);
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

long sharedKiB() {
  long pages = 0, resident = 0, shared = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld %ld", &pages, &resident, &shared) != 3) shared = 0;
    std::fclose(f);
  }
  return shared * (sysconf(_SC_PAGESIZE) / 1024);
}

int openDescriptors() {
  int count = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++count;
    closedir(d);
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  const long operations = argc > 1 ? std::atol(argv[1]) : 10000;
  const long warmup = argc > 2 ? std::atol(argv[2]) : 2000;
  const long largest = argc > 3 ? std::atol(argv[3]) : 100000;
  if (operations < 0 || warmup < 0 || largest < 1) {
    std::fprintf(stderr,
                 "usage: soak [operations [warm-up [largest count]]] (operations and warm-up 0 "
                 "or more, the largest count 1 or more)\n");
    return 2;
  }
  setenv("WEFT_CHECK", "1", 0);
  weftComm_t comm;
  if (weftCommInitFromEnv(&comm, nullptr) != weftSuccess) {
    std::fprintf(stderr, "soak: %s\n", weftGetLastError(nullptr));
    return 1;
  }
  int rank = 0, n = 0;
  weftCommUserRank(comm, &rank);
  weftCommCount(comm, &n);
  weftStream_t stream;
  weftStreamCreate(&stream);
  std::mt19937_64 random(20261129);  // the same sequence on every rank
  RankBuffers buffers;
  // Warm-up: every collective once at the largest count in the widest type, in and out of
  // place, on both kinds of stream, so that buffers, scratch and caches reach their full size
  // before memory is measured.
  for (Collective c : kAllCollectives)
    for (bool inPlace : {false, true})
      for (bool onStream : {false, true}) {
        CaseShape s{c, n, 0, static_cast<uint64_t>(largest), weftFloat64, weftAvg};
        if (!reduces(c)) s.op = weftSum;
        const CaseInputs inputs(s, s.count);
        buffers.prepare(s, rank, inPlace, inputs);
        weftResult_t r = issue(s, buffers, static_cast<weftRedOp_t>(s.op), comm,
                               onStream ? stream : nullptr);
        if (r == weftSuccess && onStream) r = weftStreamSynchronize(stream);
        if (r != weftSuccess) {
          std::fprintf(stderr, "soak: warm-up: %s\n", weftGetLastError(comm));
          return 1;
        }
      }
  // Then random operations, verified but not yet measured, until the communicator's bounded
  // caches (schedules per shape: up to 512, then reset) have filled once: measured from there,
  // growth is what keeps growing.
  long residentAfterWarmup = 0, sharedAfterWarmup = 0;
  int descriptorsAfterWarmup = 0;
  for (long i = -warmup; i < operations; ++i) {
    if (i == 0) {
      residentAfterWarmup = residentKiB();
      sharedAfterWarmup = sharedKiB();
      descriptorsAfterWarmup = openDescriptors();
    }
    // Rank 0 shows the trend (a leak keeps growing; caches filling up level off).
    if (rank == 0 && operations >= 10 && i % (operations / 10) == 0 && i > 0)
      std::fprintf(stderr, "soak: %ld operations, resident %+ld KiB (shared memory %+ld KiB)\n",
                   i, residentKiB() - residentAfterWarmup, sharedKiB() - sharedAfterWarmup);
    CaseShape s;
    s.collective = kAllCollectives[random() % std::size(kAllCollectives)];
    s.nranks = n;
    s.type = kAllTypes[random() % std::size(kAllTypes)];
    s.op = kAllOps[random() % std::size(kAllOps)];
    s.root = static_cast<int>(random() % n);
    const uint64_t scale = random() % 4;  // most counts small, some up to the largest
    s.count = random() % (scale == 3 ? uint64_t(largest) + 1 : scale == 2 ? 4097 : 65);
    // One draw in four leaves in place to each rank (a bit per rank): ranks that differ must
    // still agree on the algorithm and its path.
    const uint64_t placement = random();
    const bool inPlace =
        placement % 4 == 3 ? (placement >> 2 >> (rank % 60)) & 1 : (placement >> 2) & 1;
    const bool onStream = random() % 2;
    if (!reduces(s.collective)) s.op = weftSum;
    const CaseInputs inputs(s, s.count);
    buffers.prepare(s, rank, inPlace, inputs);
    weftRedOp_t op = static_cast<weftRedOp_t>(s.op);
    if (s.op == kPreMulSum && createPreMulSum(s.type, comm, &op) != weftSuccess) return 1;
    weftResult_t r = issue(s, buffers, op, comm, onStream ? stream : nullptr);
    if (r == weftSuccess && onStream) r = weftStreamSynchronize(stream);
    if (r != weftSuccess) {
      std::fprintf(stderr, "soak: rank %d: operation %ld (%s): %s\n", rank, i,
                   describeCase(s, inPlace).c_str(), weftGetLastError(comm));
      return 1;
    }
    if (op >= weftNumOps) weftRedOpDestroy(op, comm);
    std::string first;
    if (const uint64_t wrong = buffers.check(s, rank, inputs, first)) {
      std::fprintf(stderr, "soak: rank %d: operation %ld (%s): %lu wrong; first: %s\n", rank, i,
                   describeCase(s, inPlace).c_str(), static_cast<unsigned long>(wrong),
                   first.c_str());
      return 1;
    }
  }
  const long resident = residentKiB();
  const int descriptors = openDescriptors();
  weftStreamDestroy(stream);
  weftCommDestroy(comm);
  std::printf("soak: rank %d: %ld operations correct; resident %ld KiB after warm-up, %ld KiB at "
              "the end (%+ld KiB); open descriptors %d -> %d\n",
              rank, operations, residentAfterWarmup, resident, resident - residentAfterWarmup,
              descriptorsAfterWarmup, descriptors);
  const bool leaked = resident - residentAfterWarmup >= 1024 || descriptors != descriptorsAfterWarmup;
  return leaked ? 1 : 0;
}
