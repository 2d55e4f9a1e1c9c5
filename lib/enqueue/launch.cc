#include "lib/enqueue/launch.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "algorithms/executor.hpp"
#include "algorithms/reduce/datatype.hpp"
#include "algorithms/shm/shm_collectives.hpp"
#include "lib/base/env.hpp"
#include "lib/base/log.hpp"
#include "lib/comm/comm.hpp"
#include "lib/enqueue/check.hpp"
#include "lib/enqueue/reduction.hpp"
#include "lib/enqueue/tags.hpp"
#include "lib/stream/host_stream.hpp"
#include "lib/tuner/tuner.hpp"

namespace weft {
namespace {

struct PlannedOp {
  Operation op;
  uint64_t seq = 0;                  // collective or point-to-point sequence number
  const void* selfSource = nullptr;  // set: a receive from oneself, fed by a send to oneself
};

struct Task {
  std::shared_ptr<Comm> comm;
  std::shared_ptr<HostStream> stream;
  std::vector<PlannedOp> ops;
  uint64_t ticket = 0;
};

// A send to oneself and a receive from oneself in the same group become one copy.
void pairSelfMessages(const Comm& comm, std::vector<PlannedOp>& ops) {
  std::vector<size_t> sends, recvs;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i].op;
    if (op.root != comm.rank()) continue;
    if (op.collective == Collective::Send) sends.push_back(i);
    if (op.collective == Collective::Recv) recvs.push_back(i);
  }
  if (sends.empty() && recvs.empty()) return;
  if (sends.size() != recvs.size())
    fail(weftInvalidUsage,
         "{}: {} send(s) to itself and {} receive(s) from itself: a send to oneself needs a "
         "matching receive inside the same group",
         comm.label(), sends.size(), recvs.size());
  for (size_t k = 0; k < sends.size(); ++k) {
    const Operation& s = ops[sends[k]].op;
    PlannedOp& r = ops[recvs[k]];
    const uint64_t sendBytes = s.count * datatypeSize(s.datatype);
    const uint64_t recvBytes = r.op.count * datatypeSize(r.op.datatype);
    if (sendBytes != recvBytes)
      fail(weftInvalidUsage, "{}: send to itself of {} bytes matched with a receive of {} bytes",
           comm.label(), sendBytes, recvBytes);
    r.selfSource = s.sendbuff;
  }
  for (auto it = sends.rbegin(); it != sends.rend(); ++it) ops.erase(ops.begin() + *it);
}

// In one group, memory that a receive writes must not be read by a send or written by another
// receive (everything is in flight at once): reject it rather than deliver garbage.
void checkPointToPointOverlap(const Comm& comm, const std::vector<PlannedOp>& ops) {
  struct Span {
    uintptr_t begin, end;
    bool writes;
    const Operation* op;
  };
  std::vector<Span> spans;
  for (const PlannedOp& p : ops) {
    const Operation& op = p.op;
    const uint64_t bytes = op.count * datatypeSize(op.datatype);
    if (op.collective == Collective::Send)
      spans.push_back({reinterpret_cast<uintptr_t>(op.sendbuff),
                       reinterpret_cast<uintptr_t>(op.sendbuff) + bytes, false, &op});
    if (op.collective == Collective::Recv)
      spans.push_back({reinterpret_cast<uintptr_t>(op.recvbuff),
                       reinterpret_cast<uintptr_t>(op.recvbuff) + bytes, true, &op});
  }
  if (spans.size() < 2) return;
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  const Span* furthestWrite = nullptr;
  const Span* furthestAny = nullptr;
  for (const Span& s : spans) {
    // A receive may overlap nothing; a send may not overlap a receive.
    const Span* clash = s.writes ? furthestAny : furthestWrite;
    if (clash && clash->end > s.begin)
      fail(weftInvalidUsage,
           "{}: in one group, {} and {} use overlapping memory; a receive's buffer may not be "
           "read or written by another operation of the group",
           comm.label(), describe(*clash->op), describe(*s.op));
    if (!furthestAny || s.end > furthestAny->end) furthestAny = &s;
    if (s.writes && (!furthestWrite || s.end > furthestWrite->end)) furthestWrite = &s;
  }
}

std::vector<Task> plan(std::vector<Submission>& submissions) {
  std::vector<Task> tasks;
  for (Submission& s : submissions) {
    // Groups hold a handful of communicators: a linear search beats a map.
    auto it = std::find_if(tasks.begin(), tasks.end(),
                           [&](const Task& t) { return t.comm.get() == s.comm.get(); });
    if (it == tasks.end()) it = tasks.insert(tasks.end(), {s.comm, s.stream, {}, 0});
    Task& t = *it;
    if (t.stream != s.stream)
      fail(weftInvalidUsage,
           "{}: operations of one communicator in a group must use the same stream",
           s.comm->label());
    if (s.op.count > 0) t.ops.push_back({s.op, 0, nullptr});
  }
  for (Task& t : tasks) {
    t.comm->checkUsable();
    pairSelfMessages(*t.comm, t.ops);
    checkPointToPointOverlap(*t.comm, t.ops);
  }
  std::erase_if(tasks, [](const Task& t) { return t.ops.empty(); });
  for (Task& t : tasks) {
    Comm& comm = *t.comm;
    auto lock = comm.lockIssue();
    uint64_t collectives = 0;
    for (const PlannedOp& p : t.ops)
      if (p.op.collective != Collective::Send && p.op.collective != Collective::Recv)
        ++collectives;
    const Comm::Reservation r = comm.reserve(collectives);
    t.ticket = r.ticket;
    uint64_t next = r.firstCollective;
    for (PlannedOp& p : t.ops) {
      if (p.selfSource) continue;
      if (p.op.collective == Collective::Send)
        p.seq = comm.nextSendSeq(p.op.root);
      else if (p.op.collective == Collective::Recv)
        p.seq = comm.nextRecvSeq(p.op.root);
      else
        p.seq = next++;
    }
  }
  return tasks;
}

struct PostDivide {
  void* buffer;
  uint64_t count;
  weftDataType_t datatype;
  int divisor;
};

struct NativeItem {
  NativeCall call;
  Describer name;
};

// The native shared-memory call for `op` on this rank, its input read from `sendbuff` (the
// op's, or a scaled copy). A buffer the collective ignores on this rank (a non-root's input to
// broadcast and scatter, its output of reduce and gather: sendElements, recvElements) is left
// out, so that a private one there does not make the ranks stage where every buffer the call
// uses is mapped by all (ShmCollectives::decidePath).
NativeCall nativeCall(const Operation& op, const void* sendbuff, const ReductionPlan& reduction,
                      int rank, int n) {
  const bool any = op.count > 0;  // (with no elements, nothing is left out)
  NativeCall call;
  call.collective = op.collective;
  call.sendbuff = !any || sendElements(op, rank, n) > 0 ? sendbuff : nullptr;
  call.recvbuff = !any || recvElements(op, rank, n) > 0 ? op.recvbuff : nullptr;
  call.count = op.count;
  call.elemSize = static_cast<uint32_t>(datatypeSize(op.datatype));
  call.reduce = reduction.kernel;
  call.reduceMany = reduction.many;
  call.root = op.root;
  call.inPlace = sendbuff == op.sendbuff && isInPlace(op, rank, n);
  return call;
}

// "AllReduce(count=1024, float, sum) #12", made only for messages.
std::string describePlanned(const void* what) {
  const auto* p = static_cast<const PlannedOp*>(what);
  if (p->selfSource) return describe(p->op) + " from itself";
  return fmt::format("{} #{}", describe(p->op), p->seq);
}

struct Prepared {
  std::vector<std::shared_ptr<const Schedule>> schedules;  // kept alive while running
  std::unique_ptr<Execution> execution;                    // sends, receives, schedules
  std::vector<NativeItem> natives;                         // then these, in order
  std::vector<PostDivide> posts;
};

Prepared prepare(Task& task) {
  Comm& comm = *task.comm;
  const int n = comm.nranks(), rank = comm.rank();
  Prepared prepared;
  struct Item {
    Work work;
    bool native = false;
    uint64_t scratchOffset = 0;
    ReductionPlan reduction;
    uint64_t prescaleOffset = 0, prescaleElements = 0;
  };
  std::vector<Item> items;
  uint64_t scratchTotal = 0;
  auto take = [&](uint64_t bytes) {
    const uint64_t at = (scratchTotal + 63) & ~uint64_t{63};
    scratchTotal = at + bytes;
    return at;
  };

  for (const PlannedOp& p : task.ops) {
    const Operation& op = p.op;
    const uint32_t es = static_cast<uint32_t>(datatypeSize(op.datatype));
    const uint64_t bytes = op.count * es;
    Item item;
    Work& w = item.work;
    w.elemSize = es;
    w.buffers = {op.sendbuff, op.recvbuff, nullptr};
    std::shared_ptr<const Schedule> schedule;
    if (p.selfSource) {
      schedule = std::make_shared<const Schedule>(buildSelfCopy(bytes));
      w.buffers.send = p.selfSource;
      w.name = {&describePlanned, &p};
    } else if (op.collective == Collective::Send || op.collective == Collective::Recv) {
      schedule = std::make_shared<const Schedule>(op.collective == Collective::Send
                                                       ? buildSend(op.root, bytes)
                                                       : buildRecv(op.root, bytes));
      w.tagBase = kPointToPointBit | (p.seq & kPointToPointSeqMask);
      w.name = {&describePlanned, &p};
    } else {
      CollectiveShape shape;
      shape.collective = op.collective;
      shape.nranks = n;
      shape.rank = rank;
      shape.count = op.count;
      shape.elemSize = es;
      shape.root = op.root;
      shape.inPlace = isInPlace(op, rank, n);
      shape.hostOfRank = comm.hostOfRank();
      if (isReducing(op.collective)) {
        item.reduction = planReduction(op.op, op.datatype, n, comm.redOps());
        w.reduce = item.reduction.kernel;
        if (item.reduction.prescale) {
          // Inputs are scaled into scratch first; the schedule then reads them from there.
          item.prescaleElements = sendElements(op, rank, n);
          shape.inPlace = false;
        }
      }
      const bool nativeAvailable = comm.shm() && ShmCollectives::serves(op.collective);
      const TunerChoice choice = comm.tuner().choose(op.collective, bytes, op.datatype,
                                                     comm.overrides(), nativeAvailable,
                                                     comm.transport().name());
      if (!choice.algorithm) {
        comm.noteChoice(op.collective, "shared memory (native)");
        item.native = true;
        w.name = {&describePlanned, &p};
        if (item.prescaleElements) item.prescaleOffset = take(item.prescaleElements * es);
        items.push_back(std::move(item));
        continue;
      }
      comm.noteChoice(op.collective, choice.algorithm->name);
      shape.chunkBytes = choice.chunkBytes;
      shape.channels = choice.channels;
      shape.ringOrder = comm.ringOrder();
      schedule = comm.schedules().get(*choice.algorithm, shape);
      if (schedule->maxTag >= (uint32_t{1} << kMessageBits))
        fail(weftInternalError, "{}: {} needs {} messages per peer; the limit is {}",
             comm.label(), describe(op), schedule->maxTag + 1, 1u << kMessageBits);
      w.tagBase = (p.seq & kCollectiveSeqMask) << kMessageBits;
      w.name = {&describePlanned, &p};
      WEFT_TRACE(kSubsysColl, "{}: {} with {} (chunk {} B, {} channel(s), {} steps)",
                 comm.label(), w.name.str(), choice.algorithm->name, shape.chunkBytes,
                 shape.channels, schedule->steps.size());
    }
    w.schedule = schedule.get();
    prepared.schedules.push_back(std::move(schedule));
    item.scratchOffset = take(w.schedule->scratchBytes);
    if (item.prescaleElements) item.prescaleOffset = take(item.prescaleElements * es);
    items.push_back(std::move(item));
  }

  uint8_t* scratch = comm.scratch(scratchTotal);
  std::vector<Work> works;
  for (size_t i = 0; i < items.size(); ++i) {
    Item& item = items[i];
    Work& w = item.work;
    const Operation& op = task.ops[i].op;
    w.buffers.scratch = scratch + item.scratchOffset;
    if (item.prescaleElements) {
      uint8_t* scaled = scratch + item.prescaleOffset;
      scale(scaled, op.sendbuff, item.prescaleElements, op.datatype,
            item.reduction.scalar.data());
      w.buffers.send = scaled;
    }
    if (item.reduction.postDivide) {
      const uint64_t resultElements = recvElements(op, rank, n);
      if (resultElements)
        prepared.posts.push_back(
            {op.recvbuff, resultElements, op.datatype, item.reduction.postDivide});
    }
    if (item.native) {
      prepared.natives.push_back({nativeCall(op, w.buffers.send, item.reduction, rank, n), w.name});
      continue;
    }
    works.push_back(std::move(w));
  }
  ExecutionContext context;
  context.rank = rank;
  context.deadline = comm.deadline();
  context.timeoutMs = comm.config().timeoutMs;
  context.abortFlag = comm.abortFlag();
  if (!works.empty())
    prepared.execution = std::make_unique<Execution>(comm.transport(), std::move(works), context);
  return prepared;
}

// WEFT_CHECK=1: the ranks of every communicator compare the collectives they are about to run.
void checkConsistency(std::vector<Task>& tasks) {
  std::vector<std::unique_ptr<ConsistencyCheck>> checks;
  std::vector<Execution*> executions;
  for (Task& t : tasks) {
    std::vector<Operation> collectives;
    std::vector<uint64_t> seqs;
    for (const PlannedOp& p : t.ops)
      if (p.op.collective != Collective::Send && p.op.collective != Collective::Recv) {
        collectives.push_back(p.op);
        seqs.push_back(p.seq);
      }
    if (collectives.empty() || t.comm->nranks() == 1) continue;
    checks.push_back(std::make_unique<ConsistencyCheck>(*t.comm, collectives, seqs));
    executions.push_back(&checks.back()->execution());
  }
  if (executions.empty()) return;
  runToCompletion(executions);
  for (const auto& c : checks) c->verify();
}

bool hasCollectives(const Task& t) {
  return std::any_of(t.ops.begin(), t.ops.end(), [](const PlannedOp& p) {
    return p.op.collective != Collective::Send && p.op.collective != Collective::Recv;
  });
}

void runTasks(std::vector<Task>& tasks);

// Native shared-memory collectives block until their peers arrive, so one thread cannot drive
// several ranks through them in turn: each communicator's task gets a thread of its own.
void runTasksInThreads(std::vector<Task>& tasks) {
  std::vector<std::optional<Error>> errors(tasks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < tasks.size(); ++i)
    threads.emplace_back([&, i] {
      std::vector<Task> one;
      one.push_back(std::move(tasks[i]));
      try {
        runTasks(one);
      } catch (const Error& e) {
        errors[i] = e;
      }
    });
  for (std::thread& t : threads) t.join();
  for (auto& e : errors)
    if (e) throw *e;
}

void runTasks(std::vector<Task>& tasks) {
  if (tasks.size() > 1 && std::any_of(tasks.begin(), tasks.end(), [](const Task& t) {
        return t.comm->shm() && hasCollectives(t);
      }))
    return runTasksInThreads(tasks);
  size_t held = 0;  // tasks[0, held) hold their turn
  try {
    for (; held < tasks.size(); ++held)
      tasks[held].comm->waitTurn(tasks[held].ticket);
    for (Task& t : tasks) t.comm->checkUsable();
    if (envOrDefaults().check) checkConsistency(tasks);
    std::vector<Prepared> prepared;
    std::vector<Execution*> executions;
    for (Task& t : tasks) {
      prepared.push_back(prepare(t));
      if (prepared.back().execution) executions.push_back(prepared.back().execution.get());
    }
    if (!executions.empty()) runToCompletion(executions);
    for (size_t i = 0; i < tasks.size(); ++i) {
      Comm& comm = *tasks[i].comm;
      for (const NativeItem& native : prepared[i].natives)
        comm.shm()->run(native.call, comm.shmWait(native.name));
    }
    for (const Prepared& p : prepared)
      for (const PostDivide& d : p.posts)
        divide(d.buffer, d.buffer, d.count, d.datatype, d.divisor);
  } catch (const Error& e) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      tasks[i].comm->setFailed(e);
      if (i < held)
        tasks[i].comm->endTurn(tasks[i].ticket);
      else
        tasks[i].comm->abandonTurn(tasks[i].ticket);
    }
    throw;
  }
  for (Task& t : tasks) t.comm->endTurn(t.ticket);
}

// One collective that the native shared-memory code runs as it is, its turn reserved; or, on a
// communicator of one rank, copies: every collective's output is then its input.
struct NativeLaunch {
  Comm* comm = nullptr;
  std::shared_ptr<Comm> queuedComm;  // a queued launch's hold on it (a call now has the caller's)
  NativeCall call;
  bool self = false;  // one rank: a copy (none in place)
  PlannedOp planned;  // for messages
  uint64_t ticket = 0;
};

// Takes the communicator's next turn for `s` into `l` if the native code can run it without
// planning (no group, no scaling, a collective the tuner leaves to shared memory, or any
// collective of a single rank); returns false otherwise, having done nothing.
bool reserveNative(const Submission& s, NativeLaunch& l) {
  Comm& comm = *s.comm;
  const Operation& op = s.op;
  const bool self = comm.nranks() == 1;
  if ((!comm.shm() && !self) || op.count == 0 || op.collective == Collective::Send ||
      op.collective == Collective::Recv || !ShmCollectives::serves(op.collective) ||
      envOrDefaults().check ||
      !comm.tuner().choosesNative(op.collective, comm.overrides(), /*nativeAvailable=*/true))
    return false;
  const int n = comm.nranks(), rank = comm.rank();
  ReductionPlan reduction;
  if (isReducing(op.collective)) {
    reduction = planReduction(op.op, op.datatype, n, comm.redOps());
    if (reduction.prescale || reduction.postDivide) return false;  // prepare() scales
  }
  comm.checkUsable();
  l.comm = &comm;
  l.planned = {op, 0, nullptr};
  {
    auto lock = comm.lockIssue();
    const Comm::Reservation r = comm.reserve(1);
    l.ticket = r.ticket;
    l.planned.seq = r.firstCollective;
  }
  l.call = nativeCall(op, op.sendbuff, reduction, rank, n);
  l.self = self;
  return true;
}

// Runs a reserved native collective in its turn, in this thread.
void runNative(const NativeLaunch& l) {
  Comm& comm = *l.comm;
  bool holding = false;
  try {
    comm.waitTurn(l.ticket);
    holding = true;
    comm.checkUsable();
    if (l.self) {
      comm.noteChoice(l.planned.op.collective, "a copy (one rank)");
      if (!l.call.inPlace)
        std::memcpy(l.call.recvbuff, l.call.sendbuff, l.call.count * l.call.elemSize);
    } else {
      comm.noteChoice(l.planned.op.collective, "shared memory (native)");
      comm.shm()->run(l.call, comm.shmWait({&describePlanned, &l.planned}));
    }
  } catch (const Error& e) {
    comm.setFailed(e);
    if (holding)
      comm.endTurn(l.ticket);
    else
      comm.abandonTurn(l.ticket);
    throw;
  }
  comm.endTurn(l.ticket);
}

}  // namespace

bool launchNative(const Submission& s) {
  NativeLaunch l;
  if (!reserveNative(s, l)) return false;
  if (!s.stream) {
    runNative(l);
    return true;
  }
  // The task holds the communicator, not the stream (as launch's tasks).
  static_assert(StreamTask::kFitsInline<NativeLaunch>,
                "a queued native collective would allocate: enlarge StreamTask::kInlineBytes");
  l.queuedComm = s.comm;
  s.stream->enqueue([l = std::move(l)] { runNative(l); });
  return true;
}

void launch(std::vector<Submission> submissions) {
  std::vector<Task> tasks = plan(submissions);
  std::vector<Task> now;
  std::map<HostStream*, std::vector<Task>> queued;
  for (Task& t : tasks) {
    HostStream* stream = t.stream.get();
    // Queued tasks must not own their stream: the worker would end up destroying itself.
    // `submissions` keeps every stream alive until it has been given its tasks.
    t.stream.reset();
    (stream ? queued[stream] : now).push_back(std::move(t));
  }
  for (auto& [stream, streamTasks] : queued) {
    auto shared = std::make_shared<std::vector<Task>>(std::move(streamTasks));
    stream->enqueue([shared] { runTasks(*shared); });
  }
  if (!now.empty()) runTasks(now);
}

}  // namespace weft
