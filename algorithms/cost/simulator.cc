#include "algorithms/cost/simulator.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>
#include <vector>

#include "algorithms/partition.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

constexpr double kNever = -1;
constexpr uint32_t kNone = UINT32_MAX;

bool isPowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// Which ranks are replayed and how the others map onto them.
struct Frame {
  int nranks = 1, perHost = 1;
  Symmetry symmetry = Symmetry::None;  // None: every rank is replayed

  int replayed() const { return symmetry == Symmetry::None ? nranks : perHost; }
  int host(int r) const { return r / perHost; }
  // The replayed rank standing for rank q.
  int representative(int q) const { return symmetry == Symmetry::None ? q : q % perHost; }
  // Rank a as seen from representative(q): the image of a under the map taking q to it.
  int image(int a, int q) const {
    const int shift = q - representative(q);
    switch (symmetry) {
      case Symmetry::Rotation: return (a - shift + nranks) % nranks;
      case Symmetry::Xor: return a ^ shift;
      case Symmetry::None: break;
    }
    return a;
  }
  // Host resources are indexed by host, or all map to host 0 when replaying representatives.
  int hostIndex(int r) const { return symmetry == Symmetry::None ? host(r) : 0; }
  int hosts() const { return symmetry == Symmetry::None ? (nranks + perHost - 1) / perHost : 1; }
};

Frame chooseFrame(const Algorithm& a, Collective c, const MachineModel& m, const SimOptions& o) {
  Frame f;
  f.nranks = m.nranks;
  f.perHost = std::clamp(m.ranksPerHost, 1, m.nranks);
  // A collective with a root is not symmetric whatever its algorithm: the root is one rank.
  if (o.full || f.perHost == f.nranks || f.nranks % f.perHost != 0 || isRooted(c)) return f;
  if (a.symmetry == Symmetry::Rotation) f.symmetry = Symmetry::Rotation;
  if (a.symmetry == Symmetry::Xor && isPowerOfTwo(f.nranks) && isPowerOfTwo(f.perHost))
    f.symmetry = Symmetry::Xor;
  return f;
}

struct SimStep {
  uint64_t bytes = 0;
  int32_t peer = -1;
  uint32_t tag = 0;
  uint32_t waiting = 0;
  uint32_t next = 0, nextEnd = 0;  // dependents, in Replay::dependents_
  uint32_t rank = 0;               // replayed rank (its own number)
  uint32_t recv = kNone;           // sends: the receive it feeds (global step)
  uint32_t connection = kNone;     // sends: the (rank, peer) connection it travels on
  uint32_t pendingSend = kNone;    // rendezvous: a send waiting for this receive
  double readyAt = kNever;
  double arrivedAt = kNever;
  StepKind kind = StepKind::Copy;
  bool done = false;
};

struct Flow {
  uint32_t send = 0;
  double remaining = 0, rate = 0, last = 0, latency = 0;
  double due = 0;  // when its pending completion event fires (maybe early: see rerate)
  uint32_t res[kMaxRouteLinks] = {};   // the resources (links) it crosses
  uint32_t slot[kMaxRouteLinks] = {};  // its positions in their flow lists
  uint32_t nres = 0;
  uint32_t version = 0;
  uint32_t next = kNone;  // the flow queued behind it on its connection
};

// Messages from one rank to one peer leave in order, one at a time, as on a real connection:
// the flows of one connection never share bandwidth with each other.
struct Connection {
  uint32_t active = kNone;
  uint32_t head = kNone, tail = kNone;  // queued flows
};

struct Resource {
  double capacity = 0;  // bytes per second
  std::vector<uint32_t> flows;
};

struct Event {
  double t;
  uint64_t seq;
  uint32_t what;
  uint32_t id;
  uint32_t version;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};
enum : uint32_t { kFlowDone, kArrive, kComputed, kPosted, kCopied };

class Replay {
 public:
  using Builder = std::function<Schedule(const CollectiveShape&)>;
  Replay(const Algorithm& algorithm, const CollectiveShape& shape, const MachineModel& model,
         const SimOptions& options)
      : Replay([&algorithm](const CollectiveShape& s) { return buildSchedule(algorithm, s); },
               algorithm.name, chooseFrame(algorithm, shape.collective, model, options), shape,
               model, options) {}
  Replay(Builder builder, const char* name, Frame frame, const CollectiveShape& shape,
         const MachineModel& model, const SimOptions& options)
      : builder_(std::move(builder)),
        name_(name),
        shape_(shape),
        model_(model),
        options_(options),
        frame_(frame) {
    reduceCost_ = model.reduceGBps > 0 ? 1.0 / (model.reduceGBps * 1e9) : 0;
    copyCost_ = model.copyGBps > 0 ? 1.0 / (model.copyGBps * 1e9) : 0;
    build();
  }

  SimResult run() {
    for (uint32_t s = 0; s < steps_.size(); ++s)
      if (steps_[s].waiting == 0) ready_.push_back(s);
    drain(0);
    while (!events_.empty()) {
      const Event ev = events_.top();
      events_.pop();
      switch (ev.what) {
        case kFlowDone:
          if (flows_[ev.id].version == ev.version) flowDue(ev.id, ev.t);
          break;
        case kArrive: arrive(ev.id, ev.t); break;
        case kComputed: complete(ev.id, ev.t); break;
        case kPosted: startFlow(ev.id, ev.t); break;
        case kCopied: copied(ev.id, ev.t); break;
      }
      drain(ev.t);
    }
    if (done_ != steps_.size()) stalled();
    SimResult r;
    r.seconds = end_;
    r.messages = messages_;
    r.replayedRanks = frame_.replayed();
    r.symmetric = frame_.symmetry != Symmetry::None;
    return r;
  }

 private:
  void build() {
    const int replayed = frame_.replayed();
    std::vector<uint32_t> base(replayed + 1, 0);
    struct RecvKey {
      uint32_t rank;
      int32_t peer;
      uint32_t tag;
      uint32_t step;
    };
    std::vector<RecvKey> recvs;
    for (int r = 0; r < replayed; ++r) {
      CollectiveShape s = shape_;
      s.rank = r;
      const Schedule sched = builder_(s);
      const uint32_t first = static_cast<uint32_t>(steps_.size());
      base[r] = first;
      for (StepId i = 0; i < sched.steps.size(); ++i) {
        const Step& step = sched.steps[i];
        SimStep sim;
        sim.bytes = step.bytes;
        sim.peer = step.peer;
        sim.tag = step.tag;
        sim.kind = step.kind;
        sim.waiting = step.depCount;
        sim.rank = static_cast<uint32_t>(r);
        sim.next = static_cast<uint32_t>(dependents_.size());
        for (StepId d : sched.dependentsOf(i)) dependents_.push_back(first + d);
        sim.nextEnd = static_cast<uint32_t>(dependents_.size());
        if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce)
          recvs.push_back({static_cast<uint32_t>(r), step.peer, step.tag, first + i});
        steps_.push_back(sim);
      }
    }
    auto key = [](const RecvKey& k) { return std::tuple(k.rank, k.peer, k.tag); };
    std::sort(recvs.begin(), recvs.end(),
              [&](const RecvKey& a, const RecvKey& b) { return key(a) < key(b); });
    // Every send knows its receive and its connection up front.
    std::unordered_map<uint64_t, uint32_t> connections;
    for (SimStep& s : steps_) {
      if (s.kind != StepKind::Send) continue;
      const uint64_t pair = uint64_t{s.rank} << 32 | static_cast<uint32_t>(s.peer);
      s.connection =
          connections.try_emplace(pair, static_cast<uint32_t>(connections.size())).first->second;
      const int to = frame_.representative(s.peer);
      const int from = frame_.image(static_cast<int>(s.rank), s.peer);
      const RecvKey want{static_cast<uint32_t>(to), from, s.tag, 0};
      auto it =
          std::lower_bound(recvs.begin(), recvs.end(), want,
                           [&](const RecvKey& a, const RecvKey& b) { return key(a) < key(b); });
      if (it == recvs.end() || key(*it) != key(want))
        fail(weftInternalError,
             "{} {} on {} ranks: rank {} sends message {} to rank {}, which "
             "never receives it",
             name_, collectiveName(shape_.collective), frame_.nranks, s.rank, s.tag,
             s.peer);
      s.recv = it->step;
    }
    if (model_.links) {
      resources_.resize(model_.links->capacityGBps.size());
      for (size_t l = 0; l < resources_.size(); ++l)
        resources_[l].capacity = model_.links->capacityGBps[l] * 1e9;
      cpuFree_.assign(replayed, 0);
      connections_.resize(connections.size());
      return;
    }
    const int hosts = frame_.hosts();
    resources_.resize(2 * replayed + 2 * hosts);
    for (int r = 0; r < replayed; ++r)
      resources_[2 * r].capacity = resources_[2 * r + 1].capacity =
          model_.intra.bandwidthGBps * 1e9;
    for (int h = 0; h < hosts; ++h)
      resources_[2 * replayed + 2 * h].capacity = resources_[2 * replayed + 2 * h + 1].capacity =
          model_.inter.bandwidthGBps * 1e9;
    cpuFree_.assign(replayed, 0);
    connections_.resize(connections.size());
  }

  void push(double t, uint32_t what, uint32_t id, uint32_t version = 0) {
    events_.push({t, seq_++, what, id, version});
  }

  void drain(double t) {
    while (!ready_.empty()) {
      const uint32_t s = ready_.back();
      ready_.pop_back();
      start(s, t);
    }
  }

  void complete(uint32_t s, double t) {
    SimStep& step = steps_[s];
    step.done = true;
    ++done_;
    end_ = std::max(end_, t);
    for (uint32_t i = step.next; i < step.nextEnd; ++i)
      if (--steps_[dependents_[i]].waiting == 0) ready_.push_back(dependents_[i]);
  }

  void compute(uint32_t s, double t, double seconds) {
    if (seconds <= 0) return complete(s, t);
    double& cpu = cpuFree_[steps_[s].rank];
    cpu = std::max(cpu, t) + seconds;
    push(cpu, kComputed, s);
  }

  void start(uint32_t s, double t) {
    SimStep& step = steps_[s];
    switch (step.kind) {
      case StepKind::Send:
        if ((options_.rendezvous || step.bytes > model_.eagerBytes) &&
            steps_[step.recv].readyAt == kNever) {
          steps_[step.recv].pendingSend = s;
          return;
        }
        return post(s, t);
      case StepKind::Recv:
      case StepKind::RecvReduce:
        step.readyAt = t;
        if (step.pendingSend != kNone) {
          const uint32_t send = step.pendingSend;
          step.pendingSend = kNone;
          post(send, t);
        }
        if (step.arrivedAt != kNever) received(s, t);
        return;
      case StepKind::Copy: return compute(s, t, step.bytes * copyCost_);
      case StepKind::Reduce: return compute(s, t, step.bytes * reduceCost_);
    }
  }

  void received(uint32_t s, double t) {
    if (steps_[s].kind == StepKind::Recv) return complete(s, t);
    compute(s, t, steps_[s].bytes * reduceCost_);
  }

  // The sender's CPU spends the link's per-message cost, then the flow starts.
  void post(uint32_t s, double t) {
    const SimStep& step = steps_[s];
    const bool local = frame_.host(static_cast<int>(step.rank)) == frame_.host(step.peer);
    const double seconds = (local ? model_.intra : model_.inter).messageUs * 1e-6;
    if (seconds <= 0) return startFlow(s, t);
    double& cpu = cpuFree_[step.rank];
    cpu = std::max(cpu, t) + seconds;
    push(cpu, kPosted, s);
  }

  void startFlow(uint32_t s, double t) {
    const SimStep& step = steps_[s];
    ++messages_;
    const int from = static_cast<int>(step.rank), to = step.peer;
    const bool local = frame_.host(from) == frame_.host(to);
    const LinkParams& link = local || model_.links ? model_.intra : model_.inter;
    if (local && model_.intraCopiedByReceiver && !model_.links && step.bytes > model_.eagerBytes)
      return copyByReceiver(s, t);
    uint32_t id;
    if (!freeFlows_.empty()) {
      id = freeFlows_.back();
      freeFlows_.pop_back();
    } else {
      id = static_cast<uint32_t>(flows_.size());
      flows_.emplace_back();
    }
    Flow& f = flows_[id];
    f.send = s;
    f.next = kNone;
    f.latency = link.latencyUs * 1e-6;
    f.remaining = static_cast<double>(step.bytes);
    f.rate = 0;
    f.last = t;
    f.due = std::numeric_limits<double>::infinity();
    ++f.version;
    if (step.bytes == 0) {
      push(t + f.latency, kArrive, id);
      return;
    }
    const uint32_t replayed = static_cast<uint32_t>(frame_.replayed());
    if (model_.links) {
      const std::vector<uint32_t>& route = model_.links->route.at(from).at(to);
      if (route.empty() || route.size() > kMaxRouteLinks)
        fail(weftInternalError, "simulate: rank {} to rank {}: a route of {} links", from, to,
             route.size());
      f.nres = static_cast<uint32_t>(route.size());
      std::copy(route.begin(), route.end(), f.res);
    } else if (local) {
      f.nres = 2;
      f.res[0] = 2 * from;
      f.res[1] = 2 * frame_.representative(to) + 1;
    } else {
      f.nres = 2;
      f.res[0] = 2 * replayed + 2 * frame_.hostIndex(from);
      f.res[1] = 2 * replayed + 2 * frame_.hostIndex(to) + 1;
    }
    Connection& c = connections_[step.connection];
    if (c.active == kNone) {
      c.active = id;
      activate(id, t);
    } else if (c.tail == kNone) {
      c.head = c.tail = id;
    } else {
      flows_[c.tail].next = id;
      c.tail = id;
    }
  }

  // The flow starts moving bytes: it joins its links and everyone's shares change.
  void activate(uint32_t id, double t) {
    Flow& f = flows_[id];
    f.last = t;
    for (uint32_t k = 0; k < f.nres; ++k) {
      Resource& r = resources_[f.res[k]];
      f.slot[k] = static_cast<uint32_t>(r.flows.size());
      r.flows.push_back(id);
    }
    if (model_.links) return rerateAll(t);
    for (uint32_t k = 0; k < f.nres; ++k) rerate(f.res[k], t);
  }

  double share(uint32_t res) const {
    const Resource& r = resources_[res];
    return r.capacity / static_cast<double>(r.flows.size());
  }

  // New rates after a flow joined or left. A flow's progress is brought up to date only when its
  // rate changes. A flow whose rate fell keeps its pending event, which then fires early and is
  // pushed back (flowDue): most rate changes cost no event.
  void rerate(uint32_t res, double t) {
    for (uint32_t id : resources_[res].flows) {
      const Flow& f = flows_[id];
      double rate = share(f.res[0]);
      for (uint32_t k = 1; k < f.nres; ++k) rate = std::min(rate, share(f.res[k]));
      setRate(id, rate, t);
    }
  }

  // A flow's new rate from time t: its progress so far is booked, and its completion event moves
  // earlier when it now ends sooner (a later end is handled when the old event fires).
  void setRate(uint32_t id, double rate, double t) {
    Flow& f = flows_[id];
    if (rate == f.rate) return;
    f.remaining = std::max(0.0, f.remaining - f.rate * (t - f.last));
    f.last = t;
    f.rate = rate;
    const double due = t + f.remaining / rate;
    if (due < f.due) {
      f.due = due;
      push(due, kFlowDone, id, ++f.version);
    }
  }

  // Link-by-link machines: max-min fair rates (progressive filling), as links arbitrate between
  // flows: the link with the smallest fair share fixes the rate of its flows, which then take
  // that much of their other links; repeat. (The host model keeps the cheaper rule above.)
  void rerateAll(double t) {
    const size_t nr = resources_.size();
    std::vector<double>& left = left_;
    std::vector<uint32_t>& open = open_;
    left.resize(nr);
    open.resize(nr);
    // Only links with flows on them take part; they are scanned in index order, as before, and
    // dropped from the scan once their flows all have rates (same rates, fewer links to scan).
    std::vector<uint32_t>& busy = busy_;
    busy.clear();
    for (size_t r = 0; r < nr; ++r) {
      left[r] = resources_[r].capacity;
      open[r] = static_cast<uint32_t>(resources_[r].flows.size());
      if (open[r] > 0) busy.push_back(static_cast<uint32_t>(r));
    }
    rates_.resize(flows_.size(), -1);  // -1 everywhere: reset below after every use
    rated_.clear();
    for (;;) {
      size_t tightest = nr;
      double fair = 0;
      size_t kept = 0;
      for (uint32_t r : busy) {
        if (open[r] == 0) continue;
        busy[kept++] = r;
        if (tightest == nr || left[r] / open[r] < fair) {
          tightest = r;
          fair = left[r] / open[r];
        }
      }
      busy.resize(kept);
      if (tightest == nr) break;
      fair = std::max(fair, 0.0);
      for (uint32_t id : resources_[tightest].flows) {
        if (rates_[id] >= 0) continue;
        rates_[id] = fair;
        rated_.push_back(id);
        const Flow& f = flows_[id];
        for (uint32_t k = 0; k < f.nres; ++k) {
          left[f.res[k]] -= fair;
          --open[f.res[k]];
        }
      }
    }
    // In id order, as when every flow was visited (flows queued behind others on their
    // connection, not moving bytes now, have no rate and are skipped).
    std::sort(rated_.begin(), rated_.end());
    for (uint32_t id : rated_) {
      setRate(id, rates_[id], t);
      rates_[id] = -1;
    }
  }

  void flowDue(uint32_t id, double t) {
    Flow& f = flows_[id];
    const double left = f.remaining - f.rate * (t - f.last);
    if (left > 1e-6 * f.rate * 1e-9 + 1e-9 * f.remaining) {  // early: its rate fell meanwhile
      f.due = t + left / f.rate;
      push(f.due, kFlowDone, id, ++f.version);
      return;
    }
    flowDone(id, t);
  }

  void flowDone(uint32_t id, double t) {
    const uint32_t nres = flows_[id].nres;
    uint32_t res[kMaxRouteLinks];
    std::copy(flows_[id].res, flows_[id].res + nres, res);
    for (uint32_t k = 0; k < nres; ++k) {
      std::vector<uint32_t>& list = resources_[res[k]].flows;
      const uint32_t at = flows_[id].slot[k];
      const uint32_t moved = list.back();
      list[at] = moved;
      list.pop_back();
      if (moved != id) {
        Flow& m = flows_[moved];
        for (uint32_t j = 0; j < m.nres; ++j)
          if (m.res[j] == res[k]) m.slot[j] = at;
      }
    }
    if (model_.links)
      rerateAll(t);
    else
      for (uint32_t k = 0; k < nres; ++k) rerate(res[k], t);
    ++flows_[id].version;  // no stale completion may fire again
    push(t + flows_[id].latency, kArrive, id);
    Connection& c = connections_[steps_[flows_[id].send].connection];
    c.active = c.head;
    if (c.head != kNone) {
      c.head = flows_[c.head].next;
      if (c.head == kNone) c.tail = kNone;
      activate(c.active, t);
    }
  }

  // A rendezvous send's receive is posted by now (start() held the send until it was): the
  // receiver's CPU copies the message once it is announced and the CPU is free.
  void copyByReceiver(uint32_t s, double t) {
    const SimStep& step = steps_[s];
    double& cpu = cpuFree_[steps_[step.recv].rank];
    cpu = std::max(cpu, t + model_.intra.latencyUs * 1e-6) +
          static_cast<double>(step.bytes) / (model_.intra.bandwidthGBps * 1e9);
    push(cpu, kCopied, s);
  }

  void copied(uint32_t send, double t) {
    const uint32_t recv = steps_[send].recv;
    complete(send, t);
    steps_[recv].arrivedAt = t;
    if (steps_[recv].readyAt != kNever) received(recv, t);
  }

  void arrive(uint32_t id, double t) {
    const uint32_t send = flows_[id].send;
    freeFlows_.push_back(id);
    const uint32_t recv = steps_[send].recv;
    complete(send, t);
    steps_[recv].arrivedAt = t;
    if (steps_[recv].readyAt != kNever) received(recv, t);
  }

  [[noreturn]] void stalled() const {
    for (uint32_t s = 0; s < steps_.size(); ++s) {
      const SimStep& step = steps_[s];
      if (step.done) continue;
      fail(weftInternalError,
           "{} {} on {} ranks{}: the schedules stall; rank {} never finishes a {} step (peer {}, "
           "{} bytes, {} dependencies left)",
           name_, collectiveName(shape_.collective), frame_.nranks,
           options_.rendezvous ? " with rendezvous sends" : "", step.rank,
           step.kind == StepKind::Send   ? "send"
           : step.kind == StepKind::Copy ? "copy"
                                         : "receive",
           step.peer, step.bytes, step.waiting);
    }
    fail(weftInternalError, "simulation stalled");
  }

  const Builder builder_;
  const char* name_;
  const CollectiveShape& shape_;
  const MachineModel& model_;
  const SimOptions options_;
  const Frame frame_;
  double reduceCost_ = 0, copyCost_ = 0;  // seconds per byte

  std::vector<SimStep> steps_;
  std::vector<uint32_t> dependents_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> freeFlows_;
  std::vector<Resource> resources_;
  std::vector<double> rates_, left_;  // rerateAll's scratch
  std::vector<uint32_t> open_;
  std::vector<uint32_t> busy_;   // rerateAll's links with flows
  std::vector<uint32_t> rated_;  // rerateAll's flows given a rate
  std::vector<Connection> connections_;
  std::vector<double> cpuFree_;
  std::vector<uint32_t> ready_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0, messages_ = 0;
  size_t done_ = 0;
  double end_ = 0;
};

// How a chunked family cuts the buffer into pipelines: the number of parts (each pipelined on
// its own) per channel.
uint64_t pipelineParts(const Algorithm& a, const CollectiveShape& s) {
  switch (a.id) {
    case AlgorithmId::Ring: return s.collective == Collective::AllReduce ? s.nranks : 1;
    case AlgorithmId::ScatterAllGather: return s.nranks;
    case AlgorithmId::Tree: return 2;
    default: return 1;
  }
}

uint64_t channelsOf(const CollectiveShape& s) {
  return supportsChannels(s.collective) ? std::max(1, s.channels) : 1;
}

// The same shape cut into `chunks` chunks per pipeline (same chunk size, smaller buffer).
CollectiveShape withChunks(const Algorithm& a, const CollectiveShape& s, uint64_t chunks) {
  CollectiveShape out = s;
  const uint64_t perChunk = std::max<uint64_t>(1, s.chunkBytes / s.elemSize);
  out.count = chunks * perChunk * pipelineParts(a, s) * channelsOf(s);
  return out;
}

}  // namespace

uint64_t pipelineChunks(const Algorithm& a, const CollectiveShape& s) {
  if (!a.usesChunks(s.collective)) return 1;
  const uint64_t parts = pipelineParts(a, s) * channelsOf(s);
  return chunkCount((s.count + parts - 1) / parts, s.elemSize, s.chunkBytes);
}

SimResult simulateSchedules(const std::function<Schedule(const CollectiveShape&)>& build,
                            const CollectiveShape& shape, const MachineModel& model,
                            SimOptions options) {
  if (shape.nranks != model.nranks)
    fail(weftInternalError, "simulate: the shape has {} ranks, the machine {}", shape.nranks,
         model.nranks);
  Frame frame;
  frame.nranks = frame.perHost = model.nranks;  // every rank replayed, one host
  return Replay(build, "schedules", frame, shape, model, options).run();
}

SimResult simulate(const Algorithm& algorithm, const CollectiveShape& shape,
                   const MachineModel& model, SimOptions options) {
  if (shape.nranks != model.nranks)
    fail(weftInternalError, "simulate: the shape has {} ranks, the machine {}", shape.nranks,
         model.nranks);
  if (!algorithm.serves(shape.collective))
    fail(weftInternalError, "simulate: {} does not serve {}", algorithm.name,
         collectiveName(shape.collective));
  const uint64_t chunks = pipelineChunks(algorithm, shape);
  if (options.exact || chunks <= kReplayChunks)
    return Replay(algorithm, shape, model, options).run();
  // A long pipeline: every chunk after the pipeline fills adds the same time, so the cost is
  // affine in the number of chunks. Replay two short pipelines with the same chunk size and
  // extend the line through them.
  const CollectiveShape a = withChunks(algorithm, shape, kReplayChunks / 2),
                        b = withChunks(algorithm, shape, kReplayChunks);
  const double ca = static_cast<double>(pipelineChunks(algorithm, a)),
               cb = static_cast<double>(pipelineChunks(algorithm, b));
  const SimResult ra = Replay(algorithm, a, model, options).run();
  SimResult rb = Replay(algorithm, b, model, options).run();
  const double perChunk = (rb.seconds - ra.seconds) / (cb - ca);
  rb.seconds += perChunk * (static_cast<double>(chunks) - cb);
  rb.messages += ra.messages;
  rb.extrapolated = true;
  return rb;
}

}  // namespace weft
