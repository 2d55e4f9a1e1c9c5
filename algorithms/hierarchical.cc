// Hierarchical allreduce, reduce-scatter, allgather, broadcast and alltoall for communicators
// spread over several hosts (shape.hostOfRank). The allreduce:
//
// With H hosts and at least m ranks on every host, the buffer is cut into m shards; shard i
// belongs to local rank i of every host (the i-th rank of the host in rank order). Three stages:
//   1. intra-host reduce: every local rank sends its part of shard i to the owner of shard i on
//      its host, which reduces them into its receive buffer (direct: one hop, shared memory);
//   2. inter-host allreduce of each shard: the owners of shard i on the H hosts run a ring
//      allreduce among themselves, so m rings run at once and every local rank drives one;
//   3. intra-host broadcast: each owner sends the finished shard i to every other local rank.
// Each host sends 2(H-1)/H of the buffer over its link in stage 2, the optimum; the flat ring
// over n ranks (hosts contiguous) sends 2(n-1)/n of it over each host link, 1.5x as much for
// 2 hosts x 2 ranks. Local ranks beyond m (hosts with more ranks than the smallest) only
// contribute in stage 1 and receive in stage 3. Within a host the stages go through weft's
// shared-memory transport (transports/routed: shm to this host's peers, UCX to the others).
//
// Units: shard i is cut into H blocks (the inter-host ring's) and every block into pipeline
// chunks; every stage works unit by unit, so a unit flows through the three stages as soon as
// it is ready. For one host this is a direct reduce-scatter plus allgather over the local ranks.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/partition.hpp"
#include "algorithms/tree_pattern.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

BufferRef at(BufferId buffer, Range range, uint32_t elemSize) {
  return {buffer, range.offset * elemSize};
}

// Who is where: hosts in order of their lowest rank, local ranks in rank order.
struct HostLayout {
  std::vector<std::vector<int>> ranksOf;  // ranksOf[h][i]: global rank of local rank i on host h
  int host = 0, local = 0, shards = 0;

  explicit HostLayout(const CollectiveShape& s) {
    if (!s.hostOfRank.empty() && s.hostOfRank.size() != static_cast<size_t>(s.nranks))
      fail(weftInternalError, "hierarchical: {} host entries for {} ranks", s.hostOfRank.size(),
           s.nranks);
    std::vector<int> hostIndex;  // shape's host id -> dense index (first seen first)
    for (int r = 0; r < s.nranks; ++r) {
      const int id = s.hostOfRank.empty() ? 0 : s.hostOfRank[static_cast<size_t>(r)];
      size_t h = 0;
      while (h < hostIndex.size() && hostIndex[h] != id) ++h;
      if (h == hostIndex.size()) {
        hostIndex.push_back(id);
        ranksOf.emplace_back();
      }
      if (r == s.rank) {
        host = static_cast<int>(h);
        local = static_cast<int>(ranksOf[h].size());
      }
      ranksOf[h].push_back(r);
    }
    shards = static_cast<int>(ranksOf[0].size());
    for (const auto& ranks : ranksOf) shards = std::min(shards, static_cast<int>(ranks.size()));
  }
  int hosts() const { return static_cast<int>(ranksOf.size()); }
  int localSize() const { return static_cast<int>(ranksOf[host].size()); }
  // Lane i of host h: its ranks whose local index is i modulo `shards`, whose blocks local rank
  // i carries (allgather, reduce-scatter) or serves (alltoall).
  std::vector<int> lane(int h, int i) const {
    std::vector<int> ranks;
    for (size_t j = static_cast<size_t>(i); j < ranksOf[h].size(); j += shards)
      ranks.push_back(ranksOf[h][j]);
    return ranks;
  }
};

Schedule hierarchicalAllReduce(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const HostLayout layout(s);
  const int H = layout.hosts(), m = layout.shards, k = layout.localSize();
  const std::vector<int>& mine = layout.ranksOf[layout.host];
  const bool owner = layout.local < m;
  const int myShard = layout.local;

  auto shard = [&](int i) { return blockRange(s.count, m, i); };
  const uint64_t chunks = chunkCount(blockRange(shard(0).count, H, 0).count, e, s.chunkBytes);
  const uint64_t units = static_cast<uint64_t>(H) * chunks;  // per shard: (block, chunk)
  auto unit = [&](int i, int block, uint64_t j) {
    const Range sh = shard(i);
    const Range bl = blockRange(sh.count, H, block);
    return chunkOf(Range{sh.offset + bl.offset, bl.count}, chunks, j);
  };
  auto unitIndex = [&](int block, uint64_t j) { return static_cast<uint64_t>(block) * chunks + j; };
  // Blocks named relative to this host's place in the ring (as ring.cc names them). Stages 1
  // and 3 walk the blocks in the order the ring needs them (pos-1, pos-2, ..., pos) and finishes
  // them (pos, pos-1, ...): each host's schedule is then the previous host's rotated, which
  // keeps the units flowing in order and lets the cost model replay one host for all.
  const int pos = layout.host;
  auto blockAt = [&](int offset) { return ((pos + offset) % H + H) % H; };
  auto neededOrder = [&](int i) { return blockAt(-1 - i); };
  auto finishedOrder = [&](int i) { return blockAt(-i); };

  // Stage 1, senders: my part of every other shard to its owner on this host, unit by unit.
  // sentOf[i][u]: the send of unit u of shard i (a later receive into the same bytes, in place,
  // waits for it).
  std::vector<std::vector<StepId>> sentOf(m, std::vector<StepId>(units, kNoStep));
  for (int i = 0; i < m; ++i) {
    if (i == myShard) continue;
    for (int n = 0; n < H; ++n) {
      const int block = neededOrder(n);
      for (uint64_t j = 0; j < chunks; ++j) {
        const Range u = unit(i, block, j);
        sentOf[i][unitIndex(block, j)] = b.send(mine[i], at(BufferId::Send, u, e), u.count * e);
      }
    }
  }

  // ready[u]: the last step that wrote unit u of my shard (stage 1, then 2).
  std::vector<StepId> ready(units, kNoStep);
  uint64_t tmpBase = 0, maxUnit = 0;
  if (owner) {
    maxUnit = (blockRange(shard(0).count, H, 0).count + chunks - 1) / chunks;
    tmpBase = b.allocateScratch(units * maxUnit * e);
  }
  auto tmp = [&](uint64_t u) { return BufferRef{BufferId::Scratch, tmpBase + u * maxUnit * e}; };

  if (owner) {
    // Stage 1, owner: own input into the receive buffer, then every local peer's part added.
    for (int n = 0; n < H; ++n) {
      const int block = neededOrder(n);
      for (uint64_t j = 0; j < chunks; ++j) {
        const Range u = unit(myShard, block, j);
        const uint64_t x = unitIndex(block, j);
        ready[x] = b.copy(at(BufferId::Send, u, e), at(BufferId::Recv, u, e), u.count * e);
        for (int peer = 0; peer < k; ++peer) {
          if (peer == layout.local) continue;
          ready[x] = b.recvReduce(mine[peer], at(BufferId::Recv, u, e), tmp(x),
                                  at(BufferId::Recv, u, e), u.count * e, {ready[x]});
        }
      }
    }

    // Stage 2: ring allreduce of my shard among its owners on every host, in place in the
    // receive buffer (ring.cc's schedule, over host positions). Reduce-scatter step t sends
    // block host-t-1 and receives block host-t-2; allgather step t sends block host-t and
    // receives block host-t-1.
    if (H > 1) {
      const int right = layout.ranksOf[(pos + 1) % H][myShard];
      const int left = layout.ranksOf[(pos + H - 1) % H][myShard];
      std::vector<std::vector<StepId>> rsSend(H - 1, std::vector<StepId>(chunks));
      for (int t = 0; t < H - 1; ++t) {
        const int sendBlock = blockAt(-t - 1), recvBlock = blockAt(-t - 2);
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range u = unit(myShard, sendBlock, j);
          rsSend[t][j] = b.send(right, at(BufferId::Recv, u, e), u.count * e,
                                {ready[unitIndex(sendBlock, j)]});
        }
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range u = unit(myShard, recvBlock, j);
          const uint64_t x = unitIndex(recvBlock, j);
          // Adds to the stage-1 sum of this unit (and reuses its landing slot): after it.
          ready[x] = b.recvReduce(left, at(BufferId::Recv, u, e), tmp(x), at(BufferId::Recv, u, e),
                                  u.count * e, {ready[x]});
        }
      }
      for (int t = 0; t < H - 1; ++t) {
        const int sendBlock = blockAt(-t), recvBlock = blockAt(-t - 1);
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range u = unit(myShard, sendBlock, j);
          b.send(right, at(BufferId::Recv, u, e), u.count * e, {ready[unitIndex(sendBlock, j)]});
        }
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range u = unit(myShard, recvBlock, j);
          const uint64_t x = unitIndex(recvBlock, j);
          // This block left from these bytes in reduce-scatter step t: that send comes first.
          // As in ring.cc, chunk j of a step is received only after chunk j of the step before:
          // posting every receive at once lets the transport interleave all of them (over tcp,
          // about 1.6x slower on a shaped link).
          ready[x] = b.recv(left, at(BufferId::Recv, u, e), u.count * e,
                            {rsSend[t][j], ready[x], ready[unitIndex(sendBlock, j)]});
        }
      }
    }

    // Stage 3, owner: the finished shard to every other local rank.
    for (int peer = 0; peer < k; ++peer) {
      if (peer == layout.local) continue;
      for (int n = 0; n < H; ++n) {
        const int block = finishedOrder(n);
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range u = unit(myShard, block, j);
          b.send(mine[peer], at(BufferId::Recv, u, e), u.count * e, {ready[unitIndex(block, j)]});
        }
      }
    }
  }

  // Stage 3, receivers: every other shard from its owner on this host.
  for (int i = 0; i < m; ++i) {
    if (i == myShard) continue;
    for (int n = 0; n < H; ++n) {
      const int block = finishedOrder(n);
      for (uint64_t j = 0; j < chunks; ++j) {
        const Range u = unit(i, block, j);
        const uint64_t x = unitIndex(block, j);
        b.recv(mine[i], at(BufferId::Recv, u, e), u.count * e, {sentOf[i][x]});
      }
    }
  }
  return std::move(b).finish();
}

// Allgather, the same decomposition: (1) every rank's block to every rank of its host (direct);
// (2) part i of each host, the blocks of its local ranks j with j % m == i, travels round an
// inter-host ring of the hosts' local ranks i, m rings at once; (3) each local rank i hands
// what its ring brought to the other ranks of its host. Each host sends (H-1)/H of the output
// over its link, once, the optimum.
Schedule hierarchicalAllGather(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const HostLayout layout(s);
  const int H = layout.hosts(), m = layout.shards, k = layout.localSize();
  const std::vector<int>& mine = layout.ranksOf[layout.host];
  const uint64_t chunks = chunkCount(s.count, e, s.chunkBytes);
  // Chunk j of rank q's block in the output.
  auto piece = [&](int q, uint64_t j) {
    return chunkOf(Range{static_cast<uint64_t>(q) * s.count, s.count}, chunks, j);
  };
  // have[q][j]: the step after which chunk j of rank q's block is in the receive buffer.
  std::vector<std::vector<StepId>> have(s.nranks, std::vector<StepId>(chunks, kNoStep));

  // Stage 1: my block into place and to every other local rank; theirs from them.
  for (uint64_t j = 0; j < chunks; ++j) {
    const Range c = chunkOf(Range{0, s.count}, chunks, j);
    have[s.rank][j] =
        b.copy(at(BufferId::Send, c, e), at(BufferId::Recv, piece(s.rank, j), e), c.count * e);
  }
  for (int peer = 0; peer < k; ++peer) {
    if (peer == layout.local) continue;
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunkOf(Range{0, s.count}, chunks, j);
      b.send(mine[peer], at(BufferId::Send, c, e), c.count * e);
    }
  }
  for (int peer = 0; peer < k; ++peer) {
    if (peer == layout.local) continue;
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = piece(mine[peer], j);
      have[mine[peer]][j] = b.recv(mine[peer], at(BufferId::Recv, c, e), c.count * e);
    }
  }

  const bool owner = layout.local < m;
  const int i = layout.local;
  if (owner && H > 1) {
    // Stage 2: step t sends part i of host pos-t to the right, receives that of host pos-t-1.
    const int pos = layout.host;
    const int right = layout.ranksOf[(pos + 1) % H][i];
    const int left = layout.ranksOf[(pos + H - 1) % H][i];
    for (int t = 0; t < H - 1; ++t) {
      for (int q : layout.lane((pos - t + H) % H, i))
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range c = piece(q, j);
          b.send(right, at(BufferId::Recv, c, e), c.count * e, {have[q][j]});
        }
      for (int q : layout.lane((pos - t - 1 + 2 * H) % H, i))
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range c = piece(q, j);
          have[q][j] = b.recv(left, at(BufferId::Recv, c, e), c.count * e);
        }
    }
    // Stage 3, owner: what the ring brought, to every other local rank.
    for (int peer = 0; peer < k; ++peer) {
      if (peer == layout.local) continue;
      for (int h = 0; h < H; ++h) {
        if (h == pos) continue;
        for (int q : layout.lane(h, i))
          for (uint64_t j = 0; j < chunks; ++j) {
            const Range c = piece(q, j);
            b.send(mine[peer], at(BufferId::Recv, c, e), c.count * e, {have[q][j]});
          }
      }
    }
  }
  // Stage 3, receivers: the other hosts' part o from local rank o.
  for (int o = 0; o < m && H > 1; ++o) {
    if (o == layout.local) continue;
    for (int h = 0; h < H; ++h) {
      if (h == layout.host) continue;
      for (int q : layout.lane(h, o))
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range c = piece(q, j);
          b.recv(mine[o], at(BufferId::Recv, c, e), c.count * e);
        }
    }
  }
  return std::move(b).finish();
}

// Reduce-scatter, allgather's mirror: (1) every local rank sends its input blocks of part i
// (the blocks of the ranks j % m == i of every host) to local rank i, which sums them in
// scratch; (2) the hosts' local ranks i run a ring reduce-scatter over the hosts' parts, after
// which each holds its own host's part i fully reduced; (3) it hands every block to its rank.
// Each host sends (H-1)/H of the input over its link, once, the optimum. Hosts are walked in the
// order the ring consumes them (pos-1, pos-2, ..., pos), so every host's schedule is the
// previous one's rotated.
Schedule hierarchicalReduceScatter(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const HostLayout layout(s);
  const int H = layout.hosts(), m = layout.shards, k = layout.localSize();
  const std::vector<int>& mine = layout.ranksOf[layout.host];
  const int pos = layout.host;
  const uint64_t chunks = chunkCount(s.count, e, s.chunkBytes);
  const uint64_t maxChunk = (s.count + chunks - 1) / chunks;
  auto piece = [&](int q, uint64_t j) {
    return chunkOf(Range{static_cast<uint64_t>(q) * s.count, s.count}, chunks, j);
  };
  auto ringHost = [&](int n) { return ((pos - 1 - n) % H + H) % H; };

  // Stage 1, senders: my input blocks of part i to local rank i, for every other i.
  std::vector<StepId> sentOwn(chunks, kNoStep);  // my own block (in place: the output's bytes)
  for (int i = 0; i < m; ++i) {
    if (i == layout.local) continue;
    for (int n = 0; n < H; ++n)
      for (int q : layout.lane(ringHost(n), i))
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range c = piece(q, j);
          const StepId sent = b.send(mine[i], at(BufferId::Send, c, e), c.count * e);
          if (q == s.rank) sentOwn[j] = sent;
        }
  }

  if (layout.local < m) {
    const int i = layout.local;
    // Scratch: an accumulator and a landing slot per chunk of every block I sum.
    std::vector<int> index(static_cast<size_t>(s.nranks), -1);
    int units = 0;
    for (int h = 0; h < H; ++h)
      for (int q : layout.lane(h, i)) index[static_cast<size_t>(q)] = units++;
    const uint64_t slot = maxChunk * e;
    const uint64_t accBase = b.allocateScratch(2 * static_cast<uint64_t>(units) * chunks * slot);
    const uint64_t tmpBase = accBase + static_cast<uint64_t>(units) * chunks * slot;
    auto unitOf = [&](int q, uint64_t j) {
      return (static_cast<uint64_t>(index[static_cast<size_t>(q)]) * chunks + j) * slot;
    };
    auto acc = [&](int q, uint64_t j) {
      return BufferRef{BufferId::Scratch, accBase + unitOf(q, j)};
    };
    auto tmp = [&](int q, uint64_t j) {
      return BufferRef{BufferId::Scratch, tmpBase + unitOf(q, j)};
    };
    std::vector<std::vector<StepId>> ready(static_cast<size_t>(s.nranks));

    // Stage 1, owner: my input, then every local peer's, summed per chunk.
    for (int n = 0; n < H; ++n)
      for (int q : layout.lane(ringHost(n), i)) {
        std::vector<StepId>& r = ready[static_cast<size_t>(q)];
        r.assign(chunks, kNoStep);
        for (uint64_t j = 0; j < chunks; ++j) {
          const Range c = piece(q, j);
          r[j] = b.copy(at(BufferId::Send, c, e), acc(q, j), c.count * e);
          for (int peer = 0; peer < k; ++peer) {
            if (peer == layout.local) continue;
            r[j] = b.recvReduce(mine[peer], acc(q, j), tmp(q, j), acc(q, j), c.count * e, {r[j]});
          }
        }
      }

    // Stage 2: step t sends the partial sums of host pos-t-1's part to the right and adds the
    // left's of host pos-t-2 to mine.
    if (H > 1) {
      const int right = layout.ranksOf[(pos + 1) % H][i];
      const int left = layout.ranksOf[(pos + H - 1) % H][i];
      for (int t = 0; t < H - 1; ++t) {
        for (int q : layout.lane(ringHost(t), i))
          for (uint64_t j = 0; j < chunks; ++j)
            b.send(right, acc(q, j), piece(q, j).count * e, {ready[static_cast<size_t>(q)][j]});
        for (int q : layout.lane(ringHost(t + 1), i))
          for (uint64_t j = 0; j < chunks; ++j) {
            StepId& r = ready[static_cast<size_t>(q)][j];
            r = b.recvReduce(left, acc(q, j), tmp(q, j), acc(q, j), piece(q, j).count * e, {r});
          }
      }
    }

    // Stage 3, owner: every block of my host's part to its rank (mine into my output).
    for (int q : layout.lane(pos, i))
      for (uint64_t j = 0; j < chunks; ++j) {
        const Range c = chunkOf(Range{0, s.count}, chunks, j);
        const StepId r = ready[static_cast<size_t>(q)][j];
        if (q == s.rank)
          b.copy(acc(q, j), at(BufferId::Recv, c, e), c.count * e, {r});
        else
          b.send(q, acc(q, j), c.count * e, {r});
      }
  } else {
    // Stage 3, receivers: my block from the local rank that summed it, once my own input for
    // it has left (in place, these are the same bytes).
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunkOf(Range{0, s.count}, chunks, j);
      b.recv(mine[layout.local % m], at(BufferId::Recv, c, e), c.count * e, {sentOwn[j]});
    }
  }
  return std::move(b).finish();
}

// Broadcast: the data crosses hosts once per host, along a tree over one leader per host (the
// root on its host, the first local rank elsewhere), and each leader hands every chunk to the
// other ranks of its host as soon as it has it (the fan-out overlaps with the tree).
//
// The tree is the one that finishes first by a count of chunk transfers over host links: a
// leader sends each chunk to its children one after another, so with C chunks, F the most
// children any leader has and L the transfers until the first chunk reaches the last leader,
// the broadcast takes about F (C - 1) + L. Candidates, leaders numbered from the root's host:
//   - binomial (F = L = ceil(log2 H)): the fewest hops, for one chunk or a few;
//   - NCCL's binary tree (the root has one child, inner leaders two: F = 2, L ~ 2 log2 H);
//   - the chain (F = 1, L = H - 1): every host link carries the buffer once in and once out,
//     the fewest possible, so it wins when C dwarfs H.
// Ties go to the earlier candidate in that order.
enum class LeaderTree { Binomial, Binary, Chain };

TreeLinks leaderLinks(LeaderTree tree, int hosts, int v) {
  switch (tree) {
    case LeaderTree::Binomial: return knomialTree(hosts, v, 2);
    case LeaderTree::Binary: return binaryTree(hosts, v);
    case LeaderTree::Chain: break;
  }
  TreeLinks t;
  if (v > 0) t.parent = v - 1;
  if (v + 1 < hosts) t.children.push_back(v + 1);
  return t;
}

// F (C - 1) + L, in chunk transfers.
uint64_t leaderTreeSteps(LeaderTree tree, int hosts, uint64_t chunks) {
  std::vector<uint64_t> reached(static_cast<size_t>(hosts), 0);  // first chunk's arrival
  uint64_t fanOut = 0, last = 0;
  // Parents precede their children in every candidate when visited in breadth-first order.
  std::vector<int> queue{0};
  for (size_t i = 0; i < queue.size(); ++i) {
    const int v = queue[i];
    const TreeLinks t = leaderLinks(tree, hosts, v);
    fanOut = std::max<uint64_t>(fanOut, t.children.size());
    for (size_t k = 0; k < t.children.size(); ++k) {
      const int c = t.children[k];
      reached[static_cast<size_t>(c)] = reached[static_cast<size_t>(v)] + k + 1;
      last = std::max(last, reached[static_cast<size_t>(c)]);
      queue.push_back(c);
    }
  }
  return fanOut * (chunks - 1) + last;
}

LeaderTree chooseLeaderTree(int hosts, uint64_t chunks) {
  LeaderTree best = LeaderTree::Binomial;
  for (LeaderTree t : {LeaderTree::Binary, LeaderTree::Chain})
    if (leaderTreeSteps(t, hosts, chunks) < leaderTreeSteps(best, hosts, chunks)) best = t;
  return best;
}

Schedule hierarchicalBroadcast(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const HostLayout layout(s);
  const int H = layout.hosts();
  int rootHost = 0;
  for (int h = 0; h < H; ++h)
    for (int q : layout.ranksOf[h])
      if (q == s.root) rootHost = h;
  // Leader v (v = 0 on the root's host) leads host (rootHost + v) mod H.
  auto leader = [&](int v) {
    const int h = (rootHost + v) % H;
    return h == rootHost ? s.root : layout.ranksOf[h][0];
  };
  const int v = (layout.host - rootHost + H) % H, myLeader = leader(v);
  const bool root = s.rank == s.root, leading = s.rank == myLeader;
  const uint64_t chunks = chunkCount(s.count, e, s.chunkBytes);
  const TreeLinks links = leaderLinks(chooseLeaderTree(H, chunks), H, v);
  if (root) b.copy({BufferId::Send, 0}, {BufferId::Recv, 0}, s.count * e);
  for (uint64_t j = 0; j < chunks; ++j) {
    const Range c = chunkOf({0, s.count}, chunks, j);
    const uint64_t at = c.offset * e, bytes = c.count * e;
    if (!leading) {
      b.recv(myLeader, {BufferId::Recv, at}, bytes);
      continue;
    }
    StepId have = kNoStep;
    if (links.parent >= 0) have = b.recv(leader(links.parent), {BufferId::Recv, at}, bytes);
    const BufferId from = root ? BufferId::Send : BufferId::Recv;
    // Other hosts first: they are on the critical path, this host's ranks are one hop away.
    for (int child : links.children) b.send(leader(child), {from, at}, bytes, {have});
    for (int q : layout.ranksOf[layout.host])
      if (q != s.rank) b.send(q, {from, at}, bytes, {have});
  }
  return std::move(b).finish();
}

// Alltoall: blocks between ranks of one host go directly. A block for a rank of another host
// travels in three hops, so that two hosts exchange one message per lane instead of one per
// pair of ranks: lane i of host g holds its ranks whose local index is i mod m; (1) every rank
// sends its blocks for lane i of every other host to its own host's local rank i, which packs
// them (destination-major, then source) in scratch; (2) local rank i sends host g's pack to
// local rank i of host g, in one message; (3) that rank hands each block to its destination on
// its host. In place, a block of the buffer is overwritten only once its own data has left:
// everything received lands in scratch first.
Schedule hierarchicalAlltoAll(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint64_t blockBytes = s.count * s.elemSize;
  const HostLayout layout(s);
  const int H = layout.hosts(), m = layout.shards;
  const int pos = layout.host;
  const std::vector<int>& mine = layout.ranksOf[pos];
  const int k = static_cast<int>(mine.size());
  auto block = [&](BufferId buffer, int q) {
    return BufferRef{buffer, static_cast<uint64_t>(q) * blockBytes};
  };
  auto otherHost = [&](int n) { return (pos + 1 + n) % H; };  // n < H-1: every other host
  std::vector<int> localOf(static_cast<size_t>(s.nranks));
  for (int h = 0; h < H; ++h)
    for (size_t j = 0; j < layout.ranksOf[h].size(); ++j)
      localOf[static_cast<size_t>(layout.ranksOf[h][j])] = static_cast<int>(j);
  // consumed[q]: the step after which my Send block q is no longer needed.
  std::vector<StepId> consumed(static_cast<size_t>(s.nranks), kNoStep);
  // In place, incoming blocks land here (block q of the output at slot q) and are copied into
  // the buffer once consumed[q].
  const uint64_t landing =
      s.inPlace ? b.allocateScratch(static_cast<uint64_t>(s.nranks) * blockBytes) : 0;
  std::vector<StepId> arrived(static_cast<size_t>(s.nranks), kNoStep);
  auto into = [&](int q) {
    return s.inPlace ? BufferRef{BufferId::Scratch, landing + static_cast<uint64_t>(q) * blockBytes}
                     : block(BufferId::Recv, q);
  };

  // My own block, then the blocks between ranks of this host, directly.
  consumed[s.rank] = arrived[s.rank] =
      b.copy(block(BufferId::Send, s.rank), into(s.rank), blockBytes);
  for (int q : mine)
    if (q != s.rank) consumed[q] = b.send(q, block(BufferId::Send, q), blockBytes);
  for (int q : mine)
    if (q != s.rank) arrived[q] = b.recv(q, into(q), blockBytes);

  // (1) My blocks for every other host's lane i to local rank i (packed in place if it is me).
  const int i = layout.local < m ? layout.local : -1;  // the lane I serve, if any
  std::vector<uint64_t> packAt(static_cast<size_t>(H), 0), unpackAt(static_cast<size_t>(H), 0);
  std::vector<StepId> packed(static_cast<size_t>(H), kNoStep);  // a chain over the pack's writes
  if (i >= 0)
    for (int n = 0; n < H - 1; ++n) {
      const int g = otherHost(n);
      packAt[g] = b.allocateScratch(layout.lane(g, i).size() * k * blockBytes);
      unpackAt[g] =
          b.allocateScratch(layout.lane(pos, i).size() * layout.ranksOf[g].size() * blockBytes);
    }
  auto packSlot = [&](int g, size_t dest, int source) {  // dest: index in lane(g, i)
    return BufferRef{BufferId::Scratch,
                     packAt[g] + (dest * k + static_cast<size_t>(localOf[source])) * blockBytes};
  };
  auto join = [&](StepId chain, StepId step) {  // a zero-byte step after both
    return b.copy({BufferId::Send, 0}, {BufferId::Send, 0}, 0, {chain, step});
  };
  for (int owner = 0; owner < m; ++owner)
    for (int n = 0; n < H - 1; ++n) {
      const int g = otherHost(n);
      const std::vector<int> dests = layout.lane(g, owner);
      for (size_t d = 0; d < dests.size(); ++d) {
        const int q = dests[d];
        if (owner == layout.local)
          packed[g] = join(packed[g], consumed[q] = b.copy(block(BufferId::Send, q),
                                                           packSlot(g, d, s.rank), blockBytes));
        else
          consumed[q] = b.send(mine[owner], block(BufferId::Send, q), blockBytes);
      }
    }
  if (i >= 0) {
    for (int source = 0; source < k; ++source) {
      if (source == layout.local) continue;
      for (int n = 0; n < H - 1; ++n) {
        const int g = otherHost(n);
        const std::vector<int> dests = layout.lane(g, i);
        for (size_t d = 0; d < dests.size(); ++d)
          packed[g] = join(packed[g], b.recv(mine[source], packSlot(g, d, mine[source]),
                                             blockBytes));
      }
    }
    // (2) One message per other host each way: host g's pack out, my lane's blocks from g in.
    std::vector<StepId> unpacked(static_cast<size_t>(H), kNoStep);
    for (int n = 0; n < H - 1; ++n) {
      const int g = otherHost(n);
      b.send(layout.ranksOf[g][i], {BufferId::Scratch, packAt[g]},
             layout.lane(g, i).size() * k * blockBytes, {packed[g]});
    }
    for (int n = 0; n < H - 1; ++n) {
      const int g = (pos + H - 1 - n) % H;  // the senders in the order they send to me
      unpacked[g] = b.recv(layout.ranksOf[g][i], {BufferId::Scratch, unpackAt[g]},
                           layout.lane(pos, i).size() * layout.ranksOf[g].size() * blockBytes);
    }
    // (3) Each block to its destination on this host (mine into place).
    const std::vector<int> dests = layout.lane(pos, i);
    for (int n = 0; n < H - 1; ++n) {
      const int g = otherHost(n);
      const std::vector<int>& sources = layout.ranksOf[g];
      for (size_t d = 0; d < dests.size(); ++d)
        for (size_t j = 0; j < sources.size(); ++j) {
          const BufferRef from{BufferId::Scratch,
                               unpackAt[g] + (d * sources.size() + j) * blockBytes};
          if (dests[d] == s.rank)
            arrived[sources[j]] = b.copy(from, into(sources[j]), blockBytes, {unpacked[g]});
          else
            b.send(dests[d], from, blockBytes, {unpacked[g]});
        }
    }
  }
  // (3) The other hosts' blocks for me, from the local rank serving my lane (unless it is me).
  const int server = layout.local % m;
  if (server != layout.local)
    for (int n = 0; n < H - 1; ++n)
      for (int q : layout.ranksOf[otherHost(n)])
        arrived[q] = b.recv(mine[server], into(q), blockBytes);
  if (s.inPlace)
    for (int q = 0; q < s.nranks; ++q)
      b.copy(into(q), block(BufferId::Recv, q), blockBytes, {arrived[q], consumed[q]});
  return std::move(b).finish();
}

}  // namespace

Schedule buildHierarchical(const CollectiveShape& s) {
  switch (s.collective) {
    case Collective::AllReduce: return hierarchicalAllReduce(s);
    case Collective::AllGather: return hierarchicalAllGather(s);
    case Collective::ReduceScatter: return hierarchicalReduceScatter(s);
    case Collective::Broadcast: return hierarchicalBroadcast(s);
    case Collective::AlltoAll: return hierarchicalAlltoAll(s);
    default:
      fail(weftInternalError, "hierarchical has no schedule for {}", collectiveName(s.collective));
  }
}

}  // namespace weft
