// Every collective, datatype and operator, in place and out of place, at counts {0, 1, 2, 7,
// 37, 1023, 12289, 65537} (see largestCount; 12289 elements of 2 bytes and more are where two
// processes start to read each other through CMA instead of going one-shot), one rank per process
// under weftrun, over the real transport; plus rings of sends and receives in a group, a second
// communicator used alongside the first, operations on a host stream, and large allreduces with
// only some ranks in place, bit for bit against weft's fold order through every path the trials
// take. Exits non-zero, naming every failure, if anything is wrong.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "include/weft.h"
#include "support/fold_order.hpp"
#include "support/issue.hpp"
#include "support/launched.hpp"
#include "support/quick.hpp"

using namespace weft;
using namespace weft::testing;

namespace {

const uint64_t kCounts[] = {0, 1, 2, 7, 37, 1023, 12289, 65537};
constexpr uint64_t kMaxCount = 65537;

// Where buffers hold n blocks (holdsBlocks), every process builds and checks n^2 x 65537
// elements per case: above kFullBlocksUpTo processes the largest block is 16411 elements (still
// more than two 8 KiB chunks of every datatype).
constexpr int kFullBlocksUpTo = 5;
constexpr uint64_t kLargestBlockAbove = 16411;

uint64_t largestCount(Collective coll, int n) {
  // WEFT_TEST_QUICK (the sanitizer builds): at most 5003, as in the other sweeps; the native
  // sweep on thread ranks keeps its large counts there.
  return sweepCount(holdsBlocks(coll) && n > kFullBlocksUpTo ? kLargestBlockAbove : kMaxCount);
}

std::atomic<int> failures{0};  // reported from two threads in twoCommunicators
// Of those, calls that returned an error. A wrong result is seen by some ranks only: they go on
// with the rest, as their peers do, and fail at the end. A failed call leaves the communicator
// unusable: the later parts are left out (peers still in them fail at their deadline).
std::atomic<int> failedCalls{0};

void report(int rank, const std::string& what) {
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  ++failures;
}

bool ok(weftResult_t result, weftComm_t comm, int rank, const std::string& what) {
  if (result == weftSuccess) return true;
  report(rank, what + ": " + weftGetErrorString(result) + ": " + weftGetLastError(comm));
  ++failedCalls;
  return false;
}

// WEFT_TEST_MEMALLOC=1: buffers from weftMemAlloc (the zero-copy path between processes);
// =odd: only on the odd ranks, so that ranks whose buffers peers could map meet ranks whose
// buffers are private (every call then goes staged or through CMA, decided alike).
bool sharedBuffers(int rank) {
  const char* v = std::getenv("WEFT_TEST_MEMALLOC");
  if (!v) return false;
  const std::string value(v);
  return value == "1" || (value == "odd" && rank % 2 == 1);
}

void everyCase(weftComm_t comm, int rank, int n) {
  RankBuffers buffers(sharedBuffers(rank));
  bool shift = false;  // every other case at an element offset from an aligned address
  for (Collective coll : kAllCollectives)
    for (weftDataType_t type : kAllTypes)
      for (int op : kAllOps) {
        if (!reduces(coll) && op != weftSum) continue;
        CaseShape shape{coll, n, n - 1, 0, type, op};
        const uint64_t maxCount = largestCount(coll, n);
        const CaseInputs inputs(shape, maxCount);
        weftRedOp_t redop = static_cast<weftRedOp_t>(op);
        if (op == kPreMulSum && reduces(coll)) {
          if (!ok(createPreMulSum(type, comm, &redop), comm, rank, "weftRedOpCreatePreMulSum"))
            return;
        }
        for (uint64_t count : kCounts)
          for (bool inPlace : {false, true}) {
            shape.count = std::min(count, maxCount);
            buffers.prepare(shape, rank, inPlace, inputs, shift = !shift);
            if (!ok(issue(shape, buffers, redop, comm, nullptr), comm, rank,
                    describeCase(shape, inPlace)))
              return;  // the communicator is unusable after a failure
            std::string first;
            if (const uint64_t wrong = buffers.check(shape, rank, inputs, first))
              report(rank, fmt::format("{}: {} wrong; first: {}", describeCase(shape, inPlace),
                                       wrong, first));
          }
        if (redop >= weftNumOps) ok(weftRedOpDestroy(redop, comm), comm, rank, "weftRedOpDestroy");
      }
}

// Everyone sends to the right and the left, then receives from both, in one group; with a
// self-send as well.
void sendRecvRings(weftComm_t comm, int rank, int n) {
  for (uint64_t count : {uint64_t{1}, uint64_t{65537}}) {
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;
    std::vector<int32_t> out(count), toSelf(count), fromRight(count), fromLeft(count),
        fromSelf(count);
    for (uint64_t e = 0; e < count; ++e) {
      out[e] = int32_t(rank * 100000 + e);
      toSelf[e] = -out[e];
    }
    ok(weftGroupStart(), comm, rank, "weftGroupStart");
    ok(weftSend(out.data(), count, weftInt32, right, comm, nullptr), comm, rank, "send right");
    ok(weftSend(out.data(), count, weftInt32, left, comm, nullptr), comm, rank, "send left");
    ok(weftSend(toSelf.data(), count, weftInt32, rank, comm, nullptr), comm, rank, "send self");
    ok(weftRecv(fromLeft.data(), count, weftInt32, left, comm, nullptr), comm, rank, "recv left");
    ok(weftRecv(fromRight.data(), count, weftInt32, right, comm, nullptr), comm, rank,
       "recv right");
    ok(weftRecv(fromSelf.data(), count, weftInt32, rank, comm, nullptr), comm, rank, "recv self");
    if (!ok(weftGroupEnd(), comm, rank, "send/recv group")) return;
    for (uint64_t e = 0; e < count; ++e) {
      // With two ranks left == right: the first message from it is its send to the right.
      const int32_t wantLeft = int32_t(left * 100000 + e), wantRight = int32_t(right * 100000 + e);
      if (fromLeft[e] != wantLeft || fromRight[e] != wantRight || fromSelf[e] != -out[e]) {
        report(rank, fmt::format("send/recv ring count {} element {}", count, e));
        return;
      }
    }
  }
}

// A second communicator over the same ranks, used from another thread while the first one
// works on a host stream.
void twoCommunicators(weftComm_t first, int rank, int n) {
  weftComm_t second = nullptr;
  if (!ok(weftCommInitFromEnv(&second, nullptr), nullptr, rank, "second weftCommInitFromEnv"))
    return;
  std::vector<int64_t> a(100000, rank + 1), b(100000, 10 * (rank + 1));
  std::thread other([&] {
    for (int i = 0; i < 5; ++i)
      ok(weftAllReduce(b.data(), b.data(), b.size(), weftInt64, weftSum, second, nullptr), second,
         rank, "allreduce on the second communicator");
  });
  weftStream_t stream;
  ok(weftStreamCreate(&stream), nullptr, rank, "weftStreamCreate");
  for (int i = 0; i < 5; ++i)
    ok(weftAllReduce(a.data(), a.data(), a.size(), weftInt64, weftSum, first, stream), first,
       rank, "allreduce on a stream");
  ok(weftStreamSynchronize(stream), first, rank, "weftStreamSynchronize");
  other.join();
  int64_t sumA = int64_t(n) * (n + 1) / 2, sumB = 10 * sumA;
  for (int i = 1; i < 5; ++i) {
    sumA *= n;
    sumB *= n;
  }
  if (a.front() != sumA || a.back() != sumA) report(rank, "stream results");
  if (b.front() != sumB || b.back() != sumB) report(rank, "second communicator results");
  ok(weftStreamDestroy(stream), nullptr, rank, "weftStreamDestroy");
  ok(weftCommDestroy(second), second, rank, "destroy the second communicator");
}

// Large allreduces whose first rank is in place are a trial class of their own
// (algorithms/shm: kInPlaceClassBytes), which every rank takes from the first rank's buffers:
// with only some ranks in place, they must still agree on every call's path. Enough calls for
// the trials, the decision, the probes where two paths come close (at most
// PathTrials::kTuningCalls, 92 calls, algorithms/shm/path_trials.hpp) and held calls with every
// rank out of place; then with the first rank in place and the others not (a rank going by its
// own buffers would start trials while the others hold), then the other way round.
// The trials run every path in turn (staged, CMA, staged with cached stores). Where the ranks
// run the shared-memory collectives on one host (WEFT_TEST_FOLD_ORDER=1, which the mp(shm*)
// runs set) the inputs are ones whose float sums differ in every order but one
// (support/fold_order.hpp), and every call's result must have the bits of that fold: the path
// chosen must not show. Schedules (WEFT_SHM_DISABLE=1, WEFT_ALGO, several hosts) fold in their
// own orders: small integers there, exact in any order.
void mixedInPlaceLargeAllReduce(weftComm_t comm, int rank, int n) {
  constexpr uint64_t kCount = (1 << 20) / sizeof(float) + 3;
  constexpr int kCalls = 100;
  const char* foldOrder = std::getenv("WEFT_TEST_FOLD_ORDER");
  const bool schedules = !(foldOrder && std::string(foldOrder) == "1");
  // Rank q's element e of call c is value(q, e + c): every rank's values are computed once,
  // each element's side by side (orderedInput per element and call took two thirds of the
  // 8-process run).
  std::vector<float> values(static_cast<size_t>(n) * (kCount + kCalls));
  for (uint64_t j = 0; j < kCount + kCalls; ++j)
    for (int q = 0; q < n; ++q)
      values[j * n + q] = schedules ? float(q + 1 + j % 7) : orderedInput(q, j);
  auto input = [&](int q, uint64_t e, int call) { return values[(e + call) * n + q]; };
  std::vector<float> in(kCount), out(kCount);
  enum class InPlace { None, First, Others };
  for (InPlace round : {InPlace::None, InPlace::First, InPlace::Others}) {
    const bool inPlace = round != InPlace::None && (rank == 0) == (round == InPlace::First);
    for (int call = 0; call < kCalls; ++call) {
      for (uint64_t e = 0; e < kCount; ++e) in[e] = input(rank, e, call);
      float* dst = inPlace ? in.data() : out.data();
      const std::string what = fmt::format("large allreduce, {}in place, round {}, call {}",
                                           inPlace ? "" : "not ", static_cast<int>(round), call);
      if (!ok(weftAllReduce(in.data(), dst, kCount, weftFloat32, weftSum, comm, nullptr), comm,
              rank, what))
        return;
      for (uint64_t e = 0; e < kCount; ++e) {
        const float want = schedules
                               ? float(n * (n + 1) / 2 + n * ((e + call) % 7))
                               : foldedSum(Collective::AllReduce, n, rank, kCount, e,
                                           [&](int q, uint64_t j) { return input(q, j, call); });
        if (std::memcmp(&dst[e], &want, sizeof want) != 0) {
          report(rank, fmt::format("{}: element {} is {}, expected {}", what, e, dst[e], want));
          return;
        }
      }
    }
  }
}

}  // namespace

int main() {
  Launched launched;
  if (!joinFromEnv(launched)) return 1;
  const auto [comm, rank, n] = launched;
  everyCase(comm, rank, n);
  if (failedCalls == 0) sendRecvRings(comm, rank, n);
  if (failedCalls == 0) twoCommunicators(comm, rank, n);
  if (failedCalls == 0) mixedInPlaceLargeAllReduce(comm, rank, n);
  ok(weftCommDestroy(comm), comm, rank, "weftCommDestroy");
  if (failures) {
    std::fprintf(stderr, "rank %d: %d failure(s)\n", rank, failures.load());
    return 1;
  }
  if (rank == 0) std::printf("every collective correct on %d ranks\n", n);
  return 0;
}
