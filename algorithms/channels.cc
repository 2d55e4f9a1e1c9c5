// Parallel channels: the buffer cut into `channels` contiguous parts, each running its own copy
// of the algorithm, side by side in one schedule. Every rank lays the channels out in the same
// order, so the k-th message between two ranks is still the k-th on both sides.
#include <unordered_map>

#include "algorithms/algorithm.hpp"
#include "algorithms/partition.hpp"

namespace weft {

bool supportsChannels(Collective c) noexcept {
  return c == Collective::AllReduce || c == Collective::Broadcast || c == Collective::Reduce;
}

Schedule buildSchedule(const Algorithm& algorithm, const CollectiveShape& shape) {
  if (shape.channels <= 1 || !supportsChannels(shape.collective)) return algorithm.build(shape);
  const uint64_t e = shape.elemSize;
  Schedule out;
  // Messages already numbered per peer by earlier channels.
  std::unordered_map<int32_t, uint32_t> sent, received;
  for (int c = 0; c < shape.channels; ++c) {
    const Range part = blockRange(shape.count, shape.channels, c);
    CollectiveShape sub = shape;
    sub.count = part.count;
    sub.channels = 1;
    const Schedule one = algorithm.build(sub);
    const uint32_t stepBase = static_cast<uint32_t>(out.steps.size());
    const uint32_t depBase = static_cast<uint32_t>(out.deps.size());
    const uint64_t scratchBase = (out.scratchBytes + 63) & ~uint64_t{63};
    auto shift = [&](BufferRef& ref) {
      ref.offset += ref.buffer == BufferId::Scratch ? scratchBase : part.offset * e;
    };
    std::unordered_map<int32_t, uint32_t> sentHere, receivedHere;
    for (Step step : one.steps) {
      shift(step.src);
      shift(step.dst);
      shift(step.tmp);
      step.depBegin += depBase;
      if (step.kind == StepKind::Send) {
        step.tag += sent[step.peer];
        ++sentHere[step.peer];
      } else if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce) {
        step.tag += received[step.peer];
        ++receivedHere[step.peer];
      }
      out.maxTag = std::max(out.maxTag, step.tag);
      out.steps.push_back(step);
    }
    for (StepId d : one.deps) out.deps.push_back(d + stepBase);
    for (auto [peer, k] : sentHere) sent[peer] += k;
    for (auto [peer, k] : receivedHere) received[peer] += k;
    out.scratchBytes = scratchBase + one.scratchBytes;
  }
  // Reverse edges, as ScheduleBuilder::finish makes them.
  const size_t n = out.steps.size();
  out.dependentsBegin.assign(n + 1, 0);
  for (StepId d : out.deps) out.dependentsBegin[d + 1]++;
  for (size_t i = 0; i < n; ++i) out.dependentsBegin[i + 1] += out.dependentsBegin[i];
  out.dependents.resize(out.deps.size());
  std::vector<uint32_t> fill(out.dependentsBegin.begin(), out.dependentsBegin.end() - 1);
  for (StepId i = 0; i < n; ++i)
    for (StepId d : out.depsOf(i)) out.dependents[fill[d]++] = i;
  return out;
}

}  // namespace weft
