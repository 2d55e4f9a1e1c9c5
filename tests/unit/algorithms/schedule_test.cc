// Structural properties of every schedule builder, checked without running anything: for every
// rank count 1..17 and awkward counts, the k-th message a rank sends to a peer has the size of
// the k-th receive that peer posts from it, every dependency points to an earlier step, and
// every byte range stays inside its buffer. (What the schedules compute is checked by running
// them: tests/unit/collectives.)
#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "algorithms/algorithm.hpp"

using namespace weft;

namespace {

// Bytes of rank r's buffers for a shape (NCCL's layouts).
struct Extents {
  uint64_t send, recv;
};
Extents extents(const CollectiveShape& s) {
  const uint64_t c = s.count * s.elemSize, n = s.nranks;
  const bool root = s.rank == s.root;
  switch (s.collective) {
    case Collective::AllReduce: return {c, c};
    case Collective::Broadcast: return {root ? c : 0, c};
    case Collective::Reduce: return {c, root ? c : 0};
    case Collective::AllGather: return {c, n * c};
    case Collective::ReduceScatter: return {n * c, c};
    case Collective::AlltoAll: return {n * c, n * c};
    case Collective::Gather: return {c, root ? n * c : 0};
    case Collective::Scatter: return {root ? n * c : 0, c};
    default: return {0, 0};
  }
}

void checkRange(const Schedule& s, const Extents& e, BufferRef ref, uint64_t bytes) {
  const uint64_t limit = ref.buffer == BufferId::Send   ? e.send
                         : ref.buffer == BufferId::Recv ? e.recv
                                                        : s.scratchBytes;
  REQUIRE(ref.offset + bytes <= limit);
}

void checkFamily(const Algorithm& algo, Collective coll) {
  for (int n = 1; n <= 17; ++n)
    for (uint64_t count : {0, 1, 2, 7, 1023, 65537})
      for (uint64_t chunk : {256, 4096, 1 << 20})
        for (bool inPlace : {false, true}) {
          // sends[a][b]: sizes of a's messages to b in order; recvs[b][a] likewise.
          std::map<std::pair<int, int>, std::vector<uint64_t>> sends, recvs;
          for (int r = 0; r < n; ++r) {
            const CollectiveShape shape{coll, n, r, count, 4, n / 2, inPlace, chunk};
            const Schedule s = algo.build(shape);
            const Extents e = extents(shape);
            INFO(algo.name << " " << collectiveName(coll) << " n=" << n << " rank=" << r
                           << " count=" << count << " chunk=" << chunk);
            for (StepId i = 0; i < s.steps.size(); ++i) {
              const Step& step = s.steps[i];
              for (StepId d : s.depsOf(i)) REQUIRE(d < i);
              switch (step.kind) {
                case StepKind::Send:
                  checkRange(s, e, step.src, step.bytes);
                  REQUIRE(step.peer != r);
                  sends[{r, step.peer}].push_back(step.bytes);
                  break;
                case StepKind::Recv:
                  checkRange(s, e, step.dst, step.bytes);
                  recvs[{step.peer, r}].push_back(step.bytes);
                  break;
                case StepKind::RecvReduce:
                  checkRange(s, e, step.src, step.bytes);
                  checkRange(s, e, step.tmp, step.bytes);
                  checkRange(s, e, step.dst, step.bytes);
                  recvs[{step.peer, r}].push_back(step.bytes);
                  break;
                case StepKind::Copy:
                  checkRange(s, e, step.src, step.bytes);
                  checkRange(s, e, step.dst, step.bytes);
                  break;
                case StepKind::Reduce:
                  checkRange(s, e, step.src, step.bytes);
                  checkRange(s, e, step.tmp, step.bytes);
                  checkRange(s, e, step.dst, step.bytes);
                  break;
              }
            }
          }
          INFO(algo.name << " " << collectiveName(coll) << " n=" << n << " count=" << count);
          REQUIRE(sends == recvs);
        }
}

}  // namespace

TEST_CASE("every schedule's messages pair up, in order and size, for 1..17 ranks") {
  for (const Algorithm& algo : algorithmRegistry())
    for (int c = 0; c < kNumCollectives; ++c)
      if (algo.serves(static_cast<Collective>(c))) checkFamily(algo, static_cast<Collective>(c));
}

TEST_CASE("schedules give every message to a peer a distinct tag in send order") {
  CollectiveShape s{Collective::AllReduce, 5, 2, 1000, 4, 0, false, 256};
  Schedule sched = buildRing(s);
  uint32_t expected = 0;
  for (const Step& step : sched.steps)
    if (step.kind == StepKind::Send) CHECK(step.tag == expected++);
  CHECK(sched.maxTag + 1 == expected);
}

TEST_CASE("the registry names every algorithm once per collective and describes it") {
  for (const Algorithm& a : algorithmRegistry()) {
    CHECK(std::string(a.description).size() > 10);
    for (int c = 0; c < kNumCollectives; ++c)
      if (a.serves(static_cast<Collective>(c)))
        CHECK(findAlgorithm(static_cast<Collective>(c), a.name) == &a);
  }
  CHECK(findAlgorithm(Collective::AllReduce, "no-such-algorithm") == nullptr);
}
