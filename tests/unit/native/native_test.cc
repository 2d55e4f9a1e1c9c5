// The native shared-memory collectives with ranks as threads (weftCommInitAll): every
// collective, datatype and operator for 1..8 ranks, in place and out of place, at counts {0, 1,
// 2, 7, 37, 1023, 12289, 65537} (see kFullBlocksUpTo), buffers at aligned and odd element offsets,
// against tests/support; and that every path folds a reduction in the same order.
// ctest runs this program once per WEFT_SHM_MODE (auto: ranks read each other's buffers in
// place; staged; cma), once with buffers from weftMemAlloc, and once with WEFT_SHM_DISABLE=1:
// the same sweep over schedules and the UCX transport (1..5 ranks, WEFT_TEST_QUICK).
// WEFT_TEST_QUICK=1 (that variant, and the sanitizer builds) takes one datatype per element size
// (kOnePerSize): the paths move bytes alike for every type of a size, and every type's
// reduction is checked by the reduce tests and the loopback sweeps.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/fold_order.hpp"
#include "support/issue.hpp"
#include "support/quick.hpp"
#include "unit/api/api_support.hpp"

using namespace weft;
using namespace weft::testing;

namespace {

// 37 elements of 2-8 bytes: an inline allreduce whose payload goes on past the flag's line
// (74-296 bytes). 12289 elements of 2 or 4 bytes: one-shot allreduce above the old 16 KiB bound
// (ranks with a core each, up to 128 KiB read per rank).
const uint64_t kCounts[] = {0, 1, 2, 7, 37, 1023, 12289, 65537};
constexpr uint64_t kMaxCount = 65537;

// Where buffers hold n blocks (holdsBlocks), the largest block above kFullBlocksUpTo ranks is
// 12289 elements, not 65537.
constexpr int kFullBlocksUpTo = 5;

uint64_t largestCount(Collective coll, int n) {
  return holdsBlocks(coll) && n > kFullBlocksUpTo ? 12289 : kMaxCount;
}

bool sharedBuffers() {
  const char* v = std::getenv("WEFT_TEST_MEMALLOC");
  return v && std::string(v) == "1";
}

// Every case of one collective on n ranks; returns failure descriptions (empty: all correct).
std::vector<std::string> sweep(Collective coll, int n) {
  ThreadComms comms(n);
  std::vector<std::vector<std::string>> failures(n);
  const uint64_t maxCount = largestCount(coll, n);
  // Each rank's buffers live through the whole sweep: with weftMemAlloc memory, fresh regions
  // for every type and op would have every peer map them anew.
  std::vector<std::unique_ptr<RankBuffers>> rankBuffers;
  for (int r = 0; r < n; ++r) rankBuffers.push_back(std::make_unique<RankBuffers>(sharedBuffers()));
  for (weftDataType_t type : kAllTypes)
    for (int op : kAllOps) {
      if (!reduces(coll) && op != weftSum) continue;
      if (quick() && !onePerSize(type)) continue;
      CaseShape shape{coll, n, n > 2 ? n - 2 : 0, 0, type, op};
      const CaseInputs inputs(shape, maxCount);
      onEveryRank(n, [&](int r) {
        RankBuffers& buffers = *rankBuffers[r];
        weftRedOp_t redop = static_cast<weftRedOp_t>(op);
        if (op == kPreMulSum && reduces(coll))
          RANK_REQUIRE(createPreMulSum(type, comms[r], &redop) == weftSuccess);
        CaseShape mine = shape;
        bool shift = false;
        for (uint64_t count : kCounts)
          for (bool inPlace : {false, true}) {
            if (count > maxCount) continue;
            mine.count = count;
            buffers.prepare(mine, r, inPlace, inputs, shift = !shift);
            const weftResult_t result = issue(mine, buffers, redop, comms[r], nullptr);
            if (result != weftSuccess) {
              failures[r].push_back(describeCase(mine, inPlace) + ": " +
                                    weftGetLastError(comms[r]));
              return;
            }
            std::string first;
            if (const uint64_t wrong = buffers.check(mine, r, inputs, first))
              failures[r].push_back(fmt::format("{}{}: {} wrong; first: {}",
                                                describeCase(mine, inPlace),
                                                shift ? " (shifted)" : "", wrong, first));
          }
        if (redop >= weftNumOps) RANK_REQUIRE(weftRedOpDestroy(redop, comms[r]) == weftSuccess);
      });
    }
  std::vector<std::string> all;
  for (auto& f : failures) all.insert(all.end(), f.begin(), f.end());
  return all;
}

// Ranks that differ in place: the even ranks run in place, the odd ones out of place. A rank
// that writes its output while a peer still reads the same memory as its input would corrupt
// that peer's result: the direct one-shot allreduce and alltoall's reading of peers' buffers
// must see it and not run, on every rank alike (a rank that alone stages waits for peers that
// read instead). A broadcast's or scatter's root (rank 0) in place writes part of the
// receivers' blocks through CMA while they read the rest, whether they are in place or not.
std::vector<std::string> mixedInPlace(Collective coll, int n) {
  ThreadComms comms(n);
  std::vector<std::vector<std::string>> failures(n);
  CaseShape shape{coll, n, 0, 0, weftFloat32, weftSum};
  const uint64_t largest = holdsBlocks(coll) ? 12289 : kMaxCount;
  const CaseInputs inputs(shape, largest);
  onEveryRank(n, [&](int r) {
    RankBuffers buffers(sharedBuffers());
    CaseShape mine = shape;
    const bool inPlace = r % 2 == 0;
    for (uint64_t count : {uint64_t{12289}, largest, uint64_t{7}, largest}) {
      mine.count = count;
      buffers.prepare(mine, r, inPlace, inputs);
      if (issue(mine, buffers, weftSum, comms[r], nullptr) != weftSuccess) {
        failures[r].push_back(describeCase(mine, inPlace) + ": " + weftGetLastError(comms[r]));
        return;
      }
      std::string first;
      if (const uint64_t wrong = buffers.check(mine, r, inputs, first))
        failures[r].push_back(fmt::format("rank {}, {}: {} wrong; first: {}", r,
                                          describeCase(mine, inPlace), wrong, first));
    }
  });
  std::vector<std::string> all;
  for (auto& f : failures) all.insert(all.end(), f.begin(), f.end());
  return all;
}

// Float sums whose bits depend on the order of the additions: every rank's elements have all
// 24 bits of mantissa, both signs, and span 40 binades. Each call has one rank arrive late (a
// 2 ms sleep), a different one from call to call; the first n calls run out of place, the next n
// in place. The shared-memory paths must give the bits of the plain fold in their order
// (support/fold_order.hpp), on every call, whichever path they take (one program per WEFT_SHM_MODE
// and slot size: ctest) and whichever rank arrives last; the schedules of WEFT_SHM_DISABLE=1 the
// same bits on every call and rank. Sizes for the small paths (inline, and the last arriver where
// ranks share cores, as on a 2-core machine or under WEFT_SHM_CORES=1), the one-shot ones (5000
// floats, where ranks have a core each: WEFT_SHM_CORES=8) and the large ones.
std::vector<std::string> foldOrder(Collective coll, int n) {
  ThreadComms comms(n);
  const bool schedules = std::getenv("WEFT_SHM_DISABLE") != nullptr;
  const int root = n - 1;  // reduce: not rank 0, whose input comes first
  const uint64_t counts[] = {1, 1023, 4096, 5000, 65537};
  const int calls = 2 * n;
  // outputs[r][c][k]: rank r's output of call k at counts[c] (reduce: the root's only)
  std::vector<std::vector<std::vector<std::vector<float>>>> outputs(n);
  std::vector<std::string> errors(n);
  auto inputCount = [&](uint64_t count) {
    return coll == Collective::ReduceScatter ? count * n : count;
  };
  onEveryRank(n, [&](int r) {
    for (const uint64_t count : counts) {
      std::vector<float> in(inputCount(count));
      for (uint64_t i = 0; i < in.size(); ++i) in[i] = orderedInput(r, i);
      auto& mine = outputs[r].emplace_back();
      for (int k = 0; k < calls; ++k) {
        const bool inPlace = k >= n;
        if (k % n == r) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::vector<float> buffer = in;  // in place: input and output
        std::vector<float> out(inPlace ? 0 : count);
        const float* send = buffer.data();
        float* recv = inPlace ? buffer.data() + (coll == Collective::ReduceScatter ? r * count : 0)
                              : out.data();
        weftResult_t result = weftSuccess;
        if (coll == Collective::AllReduce)
          result = weftAllReduce(send, recv, count, weftFloat32, weftSum, comms[r], nullptr);
        else if (coll == Collective::ReduceScatter)
          result = weftReduceScatter(send, recv, count, weftFloat32, weftSum, comms[r], nullptr);
        else
          result = weftReduce(send, recv, count, weftFloat32, weftSum, root, comms[r], nullptr);
        if (result != weftSuccess) {
          errors[r] = fmt::format("rank {}, {} of {} floats, call {}: {}", r, collectiveName(coll),
                                  count, k, weftGetLastError(comms[r]));
          return;
        }
        mine.emplace_back(recv, recv + count);
      }
    }
  });
  std::vector<std::string> all;
  for (const std::string& e : errors)
    if (!e.empty()) all.push_back(e);
  if (!all.empty()) return all;
  for (size_t c = 0; c < std::size(counts); ++c) {
    const uint64_t count = counts[c];
    for (int r = 0; r < n; ++r) {
      if (coll == Collective::Reduce && r != root) continue;
      // The plain fold in its order; under the schedules, this rank's first output.
      std::vector<float> want(count);
      for (uint64_t i = 0; i < count; ++i) want[i] = foldedSum(coll, n, r, count, i, orderedInput);
      if (schedules) want = outputs[r][c][0];
      for (int k = 0; k < calls; ++k) {
        const std::vector<float>& out = outputs[r][c][k];
        uint64_t differ = 0, at = 0;
        for (uint64_t i = 0; i < count; ++i)
          if (std::memcmp(&out[i], &want[i], sizeof(float)) != 0 && differ++ == 0) at = i;
        if (differ > 0)
          all.push_back(fmt::format(
              "rank {}, {} floats, call {} ({}, rank {} late): {} elements differ from {}; "
              "first at {}: {} against {}",
              r, count, k, k >= n ? "in place" : "out of place", k % n, differ,
              schedules ? "this rank's first call" : "the fold in its order", at, out[at],
              want[at]));
      }
    }
  }
  return all;
}

// Runs one of the above (sweep, mixedInPlace, foldOrder) on every rank count the sweep covers
// and reports the first failures of each.
template <typename Run>
void checkRanks(Collective coll, Run run) {
  for (int n = 1; n <= 8; ++n) {
    if (!sweepRanks(n)) continue;
    const std::vector<std::string> failures = run(coll, n);
    INFO(collectiveName(coll) << " on " << n << " ranks: " << failures.size() << " failure(s)");
    for (size_t i = 0; i < std::min<size_t>(failures.size(), 5); ++i) UNSCOPED_INFO(failures[i]);
    CHECK(failures.empty());
  }
}

void check(Collective coll) {
  checkRanks(coll, sweep);
}

}  // namespace

// ctest runs each case by name, once per variant (CMakeLists.txt): keep the names in step.
TEST_CASE("allreduce") { check(Collective::AllReduce); }
TEST_CASE("reduce-scatter") { check(Collective::ReduceScatter); }
TEST_CASE("reduce") { check(Collective::Reduce); }
TEST_CASE("broadcast") { check(Collective::Broadcast); }
TEST_CASE("allgather") { check(Collective::AllGather); }
TEST_CASE("alltoall") { check(Collective::AlltoAll); }
TEST_CASE("collectives with some ranks in place") {
  checkRanks(Collective::AllReduce, mixedInPlace);
  checkRanks(Collective::AlltoAll, mixedInPlace);
  checkRanks(Collective::Broadcast, mixedInPlace);
  checkRanks(Collective::Scatter, mixedInPlace);
}
TEST_CASE("reductions fold in one order whatever the path and whichever rank arrives last") {
  checkRanks(Collective::AllReduce, foldOrder);
  checkRanks(Collective::ReduceScatter, foldOrder);
  checkRanks(Collective::Reduce, foldOrder);
}
TEST_CASE("gather and scatter") {
  check(Collective::Gather);
  check(Collective::Scatter);
}
