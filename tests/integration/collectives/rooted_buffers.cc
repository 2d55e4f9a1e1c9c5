// Rooted collectives whose buffers that take part come from weftMemAlloc, while the buffers
// the call ignores are private: a non-root's input to broadcast and scatter, its output of
// reduce and gather (NCCL and MPI read and write those only on the root). Every root, out of
// place and with the root in place; 256 KiB blocks of float. Checks every result, and that the
// ignored outputs are left as they were. The test's trace (CMakeLists.txt) requires the path
// that reads every rank's buffers in place: an ignored private buffer must not make a call stage.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "include/weft.h"
#include "support/launched.hpp"

namespace {

constexpr size_t kCount = 65536;  // elements per block
constexpr float kUntouched = -7.0f;

int failures = 0;
// Calls that returned an error, after which the communicator is unusable. A wrong result is
// seen by some ranks only, which go on with the rest as their peers do.
int failedCalls = 0;

void fail(int rank, const std::string& what) {
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  ++failures;
}

// Inputs are small integers, so every sum is exact whatever the order.
float value(int rank, size_t block, size_t e) {
  return static_cast<float>(rank * 64 + block * 8 + e % 7);
}

struct Shared {
  float* p = nullptr;
  explicit Shared(size_t count) {
    if (weftMemAlloc(reinterpret_cast<void**>(&p), count * sizeof(float)) != weftSuccess)
      p = nullptr;
  }
  ~Shared() {
    if (p) weftMemFree(p);
  }
};

// Compares `got` with want(e) for every e, naming the first wrong element.
template <typename Want>
void check(int rank, const std::string& what, const float* got, size_t count, Want want) {
  for (size_t e = 0; e < count; ++e)
    if (got[e] != want(e)) {
      fail(rank, what + ": element " + std::to_string(e) + " is " + std::to_string(got[e]) +
                     ", expected " + std::to_string(want(e)));
      return;
    }
}

bool called(int rank, weftResult_t r, weftComm_t comm, const std::string& what) {
  if (r == weftSuccess) return true;
  fail(rank, what + ": " + weftGetErrorString(r) + ": " + weftGetLastError(comm));
  ++failedCalls;
  return false;
}

void run(weftComm_t comm, int rank, int n, int root, bool rootInPlace) {
  const bool isRoot = rank == root;
  const bool inPlace = isRoot && rootInPlace;
  const std::string where = "root " + std::to_string(root) + (rootInPlace ? ", in place" : "");
  const size_t all = kCount * n;
  std::vector<float> ignored(all, kUntouched);  // private, non-null: what non-roots pass
  Shared send(all), recv(all);
  if (!send.p || !recv.p) {
    ++failedCalls;  // (the peers go on into this part and fail at their deadline)
    return fail(rank, "weftMemAlloc");
  }
  auto untouched = [&](const std::string& what) {
    check(rank, what + ": the ignored output", ignored.data(), all,
          [](size_t) { return kUntouched; });
  };

  // Reduce: every rank's input takes part; only the root's output.
  for (size_t e = 0; e < kCount; ++e) send.p[e] = value(rank, 0, e);
  const std::string reduce = "reduce (" + where + ")";
  float* reduceOut = isRoot ? (inPlace ? send.p : recv.p) : ignored.data();
  if (!called(rank,
              weftReduce(send.p, reduceOut, kCount, weftFloat32, weftSum, root, comm, nullptr),
              comm, reduce))
    return;
  if (isRoot)
    check(rank, reduce, reduceOut, kCount, [&](size_t e) {
      float sum = 0;
      for (int q = 0; q < n; ++q) sum += value(q, 0, e);
      return sum;
    });
  else
    untouched(reduce);

  // Broadcast: only the root's input takes part; every rank's output.
  const std::string broadcast = "broadcast (" + where + ")";
  if (isRoot)
    for (size_t e = 0; e < kCount; ++e) send.p[e] = value(root, 1, e);
  const float* broadcastIn = isRoot ? send.p : ignored.data();
  float* broadcastOut = inPlace ? send.p : recv.p;
  if (!called(rank,
              weftBroadcast(broadcastIn, broadcastOut, kCount, weftFloat32, root, comm, nullptr),
              comm, broadcast))
    return;
  check(rank, broadcast, broadcastOut, kCount, [&](size_t e) { return value(root, 1, e); });
  untouched(broadcast);

  // Gather: every rank's input takes part; only the root's output (in place: the root's input
  // is its own block of the output).
  const std::string gather = "gather (" + where + ")";
  float* gatherIn = inPlace ? recv.p + size_t(root) * kCount : send.p;
  for (size_t e = 0; e < kCount; ++e) gatherIn[e] = value(rank, 2, e);
  float* gatherOut = isRoot ? recv.p : ignored.data();
  if (!called(rank, weftGather(gatherIn, gatherOut, kCount, weftFloat32, root, comm, nullptr), comm,
              gather))
    return;
  if (isRoot)
    check(rank, gather, recv.p, all, [&](size_t e) { return value(e / kCount, 2, e % kCount); });
  else
    untouched(gather);

  // Scatter: only the root's input takes part; every rank's output (in place: the root's
  // output is its own block of the input).
  const std::string scatter = "scatter (" + where + ")";
  if (isRoot)
    for (size_t e = 0; e < all; ++e) send.p[e] = value(e / kCount, 3, e % kCount);
  const float* scatterIn = isRoot ? send.p : ignored.data();
  float* scatterOut = inPlace ? send.p + size_t(root) * kCount : recv.p;
  if (!called(rank, weftScatter(scatterIn, scatterOut, kCount, weftFloat32, root, comm, nullptr),
              comm, scatter))
    return;
  check(rank, scatter, scatterOut, kCount, [&](size_t e) { return value(rank, 3, e); });
  untouched(scatter);
}

}  // namespace

int main() {
  weft::testing::Launched launched;
  if (!weft::testing::joinFromEnv(launched)) return 1;
  const auto [comm, rank, n] = launched;
  for (int root : {0, n - 1})
    for (bool rootInPlace : {false, true})
      if (failedCalls == 0) run(comm, rank, n, root, rootInPlace);
  if (weftCommDestroy(comm) != weftSuccess) fail(rank, "weftCommDestroy");
  if (failures) return 1;
  if (rank == 0) std::printf("rooted collectives correct on %d ranks\n", n);
  return 0;
}
