#include "algorithms/schedule.hpp"

#include <algorithm>
#include <unordered_map>

#include "lib/base/error.hpp"

namespace weft {

const char* collectiveName(Collective c) noexcept {
  switch (c) {
    case Collective::AllReduce: return "AllReduce";
    case Collective::Broadcast: return "Broadcast";
    case Collective::Reduce: return "Reduce";
    case Collective::AllGather: return "AllGather";
    case Collective::ReduceScatter: return "ReduceScatter";
    case Collective::AlltoAll: return "AlltoAll";
    case Collective::Gather: return "Gather";
    case Collective::Scatter: return "Scatter";
    case Collective::Send: return "Send";
    case Collective::Recv: return "Recv";
  }
  return "?";
}

bool isRooted(Collective c) noexcept {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather ||
         c == Collective::Scatter;
}

bool isReducing(Collective c) noexcept {
  return c == Collective::AllReduce || c == Collective::Reduce || c == Collective::ReduceScatter;
}

StepId ScheduleBuilder::add(Step step, Deps deps) {
  step.depBegin = static_cast<uint32_t>(schedule_.deps.size());
  for (StepId d : deps) {
    if (d == kNoStep) continue;
    if (d >= schedule_.steps.size())
      fail(weftInternalError, "schedule step {} depends on step {} that does not exist yet",
           schedule_.steps.size(), d);
    schedule_.deps.push_back(d);
  }
  step.depCount = static_cast<uint32_t>(schedule_.deps.size()) - step.depBegin;
  schedule_.steps.push_back(step);
  return static_cast<StepId>(schedule_.steps.size() - 1);
}

namespace {
Step makeStep(StepKind kind, int peer, uint64_t bytes, BufferRef src, BufferRef dst,
              BufferRef tmp) {
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.bytes = bytes;
  step.src = src;
  step.dst = dst;
  step.tmp = tmp;
  return step;
}
}  // namespace

StepId ScheduleBuilder::send(int peer, BufferRef src, uint64_t bytes, Deps deps) {
  return add(makeStep(StepKind::Send, peer, bytes, src, {}, {}), deps);
}

StepId ScheduleBuilder::recv(int peer, BufferRef dst, uint64_t bytes, Deps deps) {
  return add(makeStep(StepKind::Recv, peer, bytes, {}, dst, {}), deps);
}

StepId ScheduleBuilder::recvReduce(int peer, BufferRef src, BufferRef tmp, BufferRef dst,
                                   uint64_t bytes, Deps deps) {
  return add(makeStep(StepKind::RecvReduce, peer, bytes, src, dst, tmp), deps);
}

StepId ScheduleBuilder::copy(BufferRef src, BufferRef dst, uint64_t bytes, Deps deps) {
  return add(makeStep(StepKind::Copy, -1, bytes, src, dst, {}), deps);
}

StepId ScheduleBuilder::reduce(BufferRef src, BufferRef tmp, BufferRef dst, uint64_t bytes,
                               Deps deps) {
  return add(makeStep(StepKind::Reduce, -1, bytes, src, dst, tmp), deps);
}

uint64_t ScheduleBuilder::allocateScratch(uint64_t bytes) {
  const uint64_t offset = (schedule_.scratchBytes + 63) & ~uint64_t{63};
  schedule_.scratchBytes = offset + bytes;
  return offset;
}

Schedule ScheduleBuilder::finish() && {
  Schedule& s = schedule_;
  // Message tags: per peer and direction, in step order.
  std::unordered_map<int32_t, uint32_t> sent, received;
  for (Step& step : s.steps) {
    if (step.kind == StepKind::Send) step.tag = sent[step.peer]++;
    if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce)
      step.tag = received[step.peer]++;
    s.maxTag = std::max(s.maxTag, step.tag);
  }
  // Reverse edges, as compressed rows.
  const size_t n = s.steps.size();
  s.dependentsBegin.assign(n + 1, 0);
  for (StepId d : s.deps) s.dependentsBegin[d + 1]++;
  for (size_t i = 0; i < n; ++i) s.dependentsBegin[i + 1] += s.dependentsBegin[i];
  s.dependents.resize(s.deps.size());
  std::vector<uint32_t> fill(s.dependentsBegin.begin(), s.dependentsBegin.end() - 1);
  for (StepId i = 0; i < n; ++i)
    for (StepId d : s.depsOf(i)) s.dependents[fill[d]++] = i;
  return std::move(s);
}

}  // namespace weft
