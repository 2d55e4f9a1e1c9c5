// Algorithms are data: a builder turns a collective's shape into one rank's Schedule, a DAG of
// steps (send a byte range to a peer, receive one, receive and reduce, copy, reduce locally).
// The executor runs schedules over any Transport; unit tests run them over the loopback
// transport; the cost model replays them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace weft {

enum class Collective : uint8_t {
  AllReduce,
  Broadcast,
  Reduce,
  AllGather,
  ReduceScatter,
  AlltoAll,
  Gather,
  Scatter,
  Send,
  Recv,
};
inline constexpr int kNumCollectives = 10;
const char* collectiveName(Collective c) noexcept;
// True for the collectives that combine values with a reduction operator.
bool isReducing(Collective c) noexcept;
// True for the collectives with a root (broadcast, reduce, gather, scatter).
bool isRooted(Collective c) noexcept;

// The three memories a schedule addresses: the caller's send and receive buffers and a scratch
// area the executor provides (Schedule::scratchBytes).
enum class BufferId : uint8_t { Send, Recv, Scratch };

struct BufferRef {
  BufferId buffer = BufferId::Send;
  uint64_t offset = 0;  // bytes
};

enum class StepKind : uint8_t {
  Send,        // send `bytes` at `src` to `peer`
  Recv,        // receive `bytes` from `peer` into `dst`
  RecvReduce,  // receive `bytes` from `peer` into `tmp`, then dst = src (op) tmp
  Copy,        // dst = src; nothing when both name the same memory
  Reduce,      // dst = src (op) tmp
};

using StepId = uint32_t;
inline constexpr StepId kNoStep = UINT32_MAX;

struct Step {
  StepKind kind = StepKind::Copy;
  int32_t peer = -1;
  uint64_t bytes = 0;
  BufferRef src, dst, tmp;
  uint32_t depBegin = 0;  // this step starts when deps[depBegin, depBegin + depCount) are done
  uint32_t depCount = 0;
  // The k-th send to a peer matches that peer's k-th receive from this rank: `tag` is k.
  uint32_t tag = 0;
};

struct Schedule {
  std::vector<Step> steps;
  std::vector<StepId> deps;
  // Reverse edges (who waits for step i): dependents[dependentsBegin[i], dependentsBegin[i+1]).
  std::vector<uint32_t> dependentsBegin;
  std::vector<StepId> dependents;
  uint64_t scratchBytes = 0;
  uint32_t maxTag = 0;  // largest message index used (tags must fit the executor's tag field)

  std::span<const StepId> depsOf(StepId i) const {
    return {deps.data() + steps[i].depBegin, steps[i].depCount};
  }
  std::span<const StepId> dependentsOf(StepId i) const {
    return {dependents.data() + dependentsBegin[i], dependentsBegin[i + 1] - dependentsBegin[i]};
  }
};

// Builds a Schedule step by step. Dependencies equal to kNoStep are ignored, so builders can
// pass "the previous step, if there was one" without branching.
class ScheduleBuilder {
 public:
  using Deps = std::initializer_list<StepId>;

  StepId send(int peer, BufferRef src, uint64_t bytes, Deps deps = {});
  StepId recv(int peer, BufferRef dst, uint64_t bytes, Deps deps = {});
  StepId recvReduce(int peer, BufferRef src, BufferRef tmp, BufferRef dst, uint64_t bytes,
                    Deps deps = {});
  StepId copy(BufferRef src, BufferRef dst, uint64_t bytes, Deps deps = {});
  StepId reduce(BufferRef src, BufferRef tmp, BufferRef dst, uint64_t bytes, Deps deps = {});

  // Reserves scratch bytes (64-byte aligned) and returns their offset.
  uint64_t allocateScratch(uint64_t bytes);

  // Assigns message tags in step order and computes the reverse edges.
  Schedule finish() &&;

 private:
  StepId add(Step step, Deps deps);
  Schedule schedule_;
};

}  // namespace weft
