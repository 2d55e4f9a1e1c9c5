#include "lib/comm/split.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/executor.hpp"
#include "lib/base/env.hpp"
#include "lib/base/error.hpp"
#include "lib/base/log.hpp"
#include "lib/bootstrap/bootstrap.hpp"
#include "lib/bootstrap/root.hpp"
#include "transports/ucx/ucx_transport.hpp"

namespace weft {
namespace {

struct Member {
  int color, key, rank;
  uint32_t nextContext;  // ucxContextIds().next when this rank offers to share, else 0
  uint32_t share;        // 1: splitShare asked for and there is a UCX worker to share
};

// Whether the children of this split share the parent's UCX worker: every member asked for it,
// the agreed context id fits the tag, and the worker reaches every peer the child will post to
// over UCX (a parent that uses UCX only for other hosts has no endpoint to itself, which a
// child with one rank per host would need). The same answer on every member.
bool childShares(Comm& parent, Bootstrap& bootstrap, const std::vector<Member>& group,
                 uint32_t context) {
  if (group.empty() || parent.ucx() == nullptr) return false;
  for (const Member& m : group)
    if (m.share != 1) return false;
  if (context > ucxContextIds(*parent.ucx()).max) return false;
  std::map<std::string, int> perHost;
  int ranksPerHost = 0;
  for (const Member& m : group)
    ranksPerHost = std::max(ranksPerHost, ++perHost[bootstrap.rankInfo(m.rank).hostId]);
  const bool childToAll = ranksPerHost < 2 || env().shmDisable;
  return parent.ucxToAll() || !childToAll;
}

std::vector<uint8_t> bytesOf(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return std::vector<uint8_t>(b, b + n);
}

// A fresh root for a new communicator of `nranks`, hosted by this process; the id to hand out.
weftUniqueId hostRoot(const CommConfig& config) {
  RootOptions options;
  options.rounds = 1;
  options.lifetime = Deadline::afterMs(config.timeoutMs);
  std::unique_ptr<Root> root = startRoot(options);
  weftUniqueId id;
  root->id().toWire(id);
  root->detach();  // serves its one round, then ends
  return id;
}

// Shrink's own messages use point-to-point tags far above any user send's sequence number.
constexpr uint64_t kShrinkTag = (uint64_t{1} << 43) | (uint64_t{1} << 42);

// Moves the new communicator's unique id from `leader` to every other survivor over the
// parent's transport, outside the parent's operation order (the parent may have failed).
weftUniqueId shareOverTransport(Comm& parent, const std::vector<int>& survivors, int leader,
                                weftUniqueId id, uint64_t round) {
  const int me = parent.rank();
  std::vector<Schedule> schedules;
  if (me == leader) {
    for (int r : survivors)
      if (r != me) schedules.push_back(buildSend(r, sizeof id));
  } else {
    schedules.push_back(buildRecv(leader, sizeof id));
  }
  std::vector<Work> works;
  for (const Schedule& s : schedules) {
    Work w;
    w.schedule = &s;
    w.buffers = {&id, &id, nullptr};
    w.tagBase = kShrinkTag | (round & 0xffff);
    w.name = {nullptr, nullptr, "weftCommShrink: passing the new communicator's id"};
    works.push_back(w);
  }
  ExecutionContext context;
  context.rank = me;
  context.deadline = parent.deadline();
  context.timeoutMs = parent.config().timeoutMs;
  // No abort flag (shrink may follow an abort of the parent), and the dead peers are expected.
  context.stopOnLostPeer = false;
  Execution execution(parent.transport(), std::move(works), context);
  Execution* all[] = {&execution};
  runToCompletion(all);
  return id;
}

}  // namespace

std::shared_ptr<Comm> splitComm(Comm& parent, int color, int key, const CommConfig& config,
                                Comm::AbortFlag abortFlag) {
  Bootstrap* bootstrap = parent.bootstrap();
  if (!bootstrap) fail(weftInvalidUsage, "{}: this communicator cannot be split", parent.label());
  parent.checkUsable();
  // In the parent's operation order, so a split never overtakes an operation issued before it.
  uint64_t ticket;
  {
    auto lock = parent.lockIssue();
    ticket = parent.reserve(0).ticket;
  }
  std::shared_ptr<Comm> child;
  try {
    parent.waitTurn(ticket);
    const Deadline deadline = parent.deadline();
    Transport* ucx = parent.ucx();
    const bool offer = config.splitShare && ucx != nullptr;
    const Member mine{color < 0 ? -1 : color, key, parent.rank(),
                      offer ? ucxContextIds(*ucx).next : 0, offer ? 1u : 0u};
    std::vector<Member> all;
    for (const auto& blob : bootstrap->allGather(bytesOf(&mine, sizeof mine), deadline)) {
      if (blob.size() != sizeof(Member)) fail(weftInternalError, "split: bad member record");
      Member m;
      std::memcpy(&m, blob.data(), sizeof m);
      all.push_back(m);
    }
    std::vector<Member> group;
    uint32_t context = 0;  // above every id handed out on any rank of the parent
    for (const Member& m : all) {
      if (mine.color >= 0 && m.color == mine.color) group.push_back(m);
      context = std::max(context, m.nextContext);
    }
    std::sort(group.begin(), group.end(), [](const Member& a, const Member& b) {
      return a.key != b.key ? a.key < b.key : a.rank < b.rank;
    });
    // Each group's first member hosts the new root and hands its id out through the parent.
    const bool leader = !group.empty() && group.front().rank == parent.rank();
    const weftUniqueId id = leader ? hostRoot(config) : weftUniqueId{};
    const auto ids = bootstrap->allGather(leader ? bytesOf(&id, sizeof id) : std::vector<uint8_t>{},
                                          deadline);
    if (!group.empty()) {
      const auto& leaderId = ids[group.front().rank];
      if (leaderId.size() != sizeof(weftUniqueId))
        fail(weftInternalError, "split: no id from rank {}", group.front().rank);
      weftUniqueId childId;
      std::memcpy(&childId, leaderId.data(), sizeof childId);
      const int newRank = static_cast<int>(
          std::find_if(group.begin(), group.end(),
                       [&](const Member& m) { return m.rank == parent.rank(); }) -
          group.begin());
      Comm::UcxShare share{ucx, context, {}};
      for (const Member& m : group) share.parentRanks.push_back(m.rank);
      const bool shares = childShares(parent, *bootstrap, group, context);
      child = Comm::connect(childId, static_cast<int>(group.size()), newRank, config, abortFlag,
                            shares ? &share : nullptr);
      WEFT_INFO(kSubsysInit, "{}: split color {} key {}: {}{}", parent.label(), color, key,
                child->label(),
                shares ? fmt::format(", sharing the UCX worker as context {}", context) : "");
    }
  } catch (...) {
    parent.endTurn(ticket);
    throw;
  }
  parent.endTurn(ticket);
  return child;
}

std::shared_ptr<Comm> shrinkComm(Comm& parent, std::span<const int> exclude, bool abortFirst,
                                 const CommConfig& config, Comm::AbortFlag abortFlag) {
  const int n = parent.nranks();
  std::vector<bool> excluded(n, false);
  for (int r : exclude) {
    if (r < 0 || r >= n)
      fail(weftInvalidArgument, "excludeRanksList holds {}, not a rank of this {}-rank "
           "communicator", r, n);
    excluded[r] = true;
  }
  if (excluded[parent.rank()])
    fail(weftInvalidUsage, "{}: this rank is in excludeRanksList; only the survivors call "
         "weftCommShrink", parent.label());
  std::vector<int> survivors;
  for (int r = 0; r < n; ++r)
    if (!excluded[r]) survivors.push_back(r);
  if (abortFirst) {
    parent.abort();  // releases anything still waiting on the parent
    parent.waitIdle(parent.deadline());
  }
  const int leader = survivors.front();
  const weftUniqueId hosted = parent.rank() == leader ? hostRoot(config) : weftUniqueId{};
  const weftUniqueId id = shareOverTransport(parent, survivors, leader, hosted,
                                             parent.nextShrinkRound());
  const int newRank = static_cast<int>(
      std::find(survivors.begin(), survivors.end(), parent.rank()) - survivors.begin());
  auto child = Comm::connect(id, static_cast<int>(survivors.size()), newRank, config,
                             std::move(abortFlag));
  WEFT_INFO(kSubsysInit, "{}: shrunk to {} of {} ranks: {}", parent.label(), survivors.size(), n,
            child->label());
  return child;
}

}  // namespace weft
