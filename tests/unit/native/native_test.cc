// The native shared-memory collectives with ranks as threads (weftCommInitAll): every
// collective, datatype and operator for 1..8 ranks, in place and out of place, at counts {0, 1,
// 2, 7, 37, 1023, 12289, 65537} (see kFullBlocksUpTo), buffers at aligned and odd element offsets,
// against tests/support; and that an allreduce's bits do not depend on which rank arrives last.
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
// 24 bits of mantissa, both signs, and span 40 binades. Each call has one rank arrive late (a 2 ms
// sleep), a different one from call to call, and every rank's output of every call must have the
// bits of rank 0's first: whichever rank arrives last, the same inputs give the same result. Sizes
// for the small paths (inline, and the last arriver where ranks share cores, as on a 2-core machine
// or under WEFT_SHM_CORES=1) and one beyond them.
std::vector<std::string> arrivalOrder(Collective coll, int n) {
  ThreadComms comms(n);
  const uint64_t counts[] = {1, 1023, 4096, 65537};
  const int calls = 2 * n;
  // outputs[r][c][k]: rank r's output of call k at counts[c]
  std::vector<std::vector<std::vector<std::vector<float>>>> outputs(n);
  std::vector<std::string> errors(n);
  onEveryRank(n, [&](int r) {
    for (const uint64_t count : counts) {
      std::vector<float> in(count);
      for (uint64_t i = 0; i < count; ++i) {
        const uint64_t h = (i * 0x9E3779B97F4A7C15ULL + r * 0xBF58476D1CE4E5B9ULL) >> 40;
        const float mantissa = 1.0f + static_cast<float>(h & 0x7FFFFF) / (1 << 23);
        const int exponent = static_cast<int>((5 * r + 3 * i) % 40) - 20;
        in[i] = std::ldexp((h >> 23) & 1 ? -mantissa : mantissa, exponent);
      }
      auto& mine = outputs[r].emplace_back();
      for (int k = 0; k < calls; ++k) {
        if (k % n == r) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::vector<float>& out = mine.emplace_back(count);
        if (weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, comms[r], nullptr) !=
            weftSuccess) {
          errors[r] = fmt::format("rank {}, {} of {} floats, call {}: {}", r, collectiveName(coll),
                                  count, k, weftGetLastError(comms[r]));
          return;
        }
      }
    }
  });
  std::vector<std::string> all;
  for (const std::string& e : errors)
    if (!e.empty()) all.push_back(e);
  if (!all.empty()) return all;
  for (size_t c = 0; c < std::size(counts); ++c) {
    const std::vector<float>& first = outputs[0][c][0];
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < calls; ++k) {
        const std::vector<float>& out = outputs[r][c][k];
        uint64_t differ = 0, at = 0;
        for (uint64_t i = 0; i < counts[c]; ++i)
          if (std::memcmp(&out[i], &first[i], sizeof(float)) != 0 && differ++ == 0) at = i;
        if (differ > 0)
          all.push_back(fmt::format(
              "rank {}, {} floats, call {} (rank {} late): {} elements differ from rank 0's "
              "first call; first at {}: {} against {}",
              r, counts[c], k, k % n, differ, at, out[at], first[at]));
      }
  }
  return all;
}

// Runs one of the above (sweep, mixedInPlace, arrivalOrder) on every rank count the sweep covers
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
TEST_CASE("allreduce gives the same bits whichever rank arrives last") {
  checkRanks(Collective::AllReduce, arrivalOrder);
}
TEST_CASE("gather and scatter") {
  check(Collective::Gather);
  check(Collective::Scatter);
}
