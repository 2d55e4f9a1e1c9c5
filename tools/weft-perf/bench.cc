#include "bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "collectives.hpp"
#include "median.hpp"
#include "regions.hpp"
#include "sizes.hpp"
#include "values.hpp"

namespace weft::perf {
namespace {

// A page-aligned allocation with kGuardBytes in front of element 0 and after the largest
// extent; zeroed, so that its pages are touched by the rank that owns it. With -R 1 it comes from
// weftMemAlloc and is registered with the communicator (every local rank maps it: zero copy).
class GuardedBuffer {
 public:
  GuardedBuffer(uint64_t bytes, const RankSetup& setup, bool registered)
      : setup_(setup), registered_(registered) {
    constexpr size_t kPage = 4096;
    const size_t total = (bytes + 2 * kGuardBytes + kPage - 1) / kPage * kPage;
    if (registered_) {
      void* p = nullptr;
      ensure(setup_, weftMemAlloc(&p, total), "weftMemAlloc");
      base_ = static_cast<uint8_t*>(p);
      ensure(setup_, weftCommRegister(setup_.comm, base_, total, &handle_), "weftCommRegister");
    } else {
      base_ = static_cast<uint8_t*>(std::aligned_alloc(kPage, total));
    }
    if (base_ == nullptr) {
      fmt::print(stderr, "weft-perf: cannot allocate {} bytes\n", total);
      std::fflush(stdout);
      std::_Exit(1);
    }
    std::memset(base_, 0, total);
  }
  ~GuardedBuffer() {
    if (!registered_) {
      std::free(base_);
      return;
    }
    ensure(setup_, weftCommDeregister(setup_.comm, handle_), "weftCommDeregister");
    ensure(setup_, weftMemFree(base_), "weftMemFree");
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  uint8_t* data() const { return base_ + kGuardBytes; }

 private:
  const RankSetup& setup_;
  bool registered_;
  uint8_t* base_ = nullptr;
  void* handle_ = nullptr;
};

weftRedOp_t builtinOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return weftSum;
    case ReduceOp::Prod: return weftProd;
    case ReduceOp::Max: return weftMax;
    case ReduceOp::Min: return weftMin;
    case ReduceOp::Avg: return weftAvg;
    case ReduceOp::PreMulSum: break;
  }
  return weftSum;
}

struct Context {
  const Options& options;
  const RankSetup& setup;
  uint8_t* buffers[2];
};

// Runs `times` calls: blocking each, or enqueued and then synchronized once.
void runCalls(const Context& ctx, const Call& call, int times) {
  for (int i = 0; i < times; ++i) {
    const CallResult r = issue(call, ctx.setup.comm, ctx.setup.stream);
    ensure(ctx.setup, r.result, r.function);
  }
  if (ctx.setup.stream != nullptr && times > 0)
    ensure(ctx.setup, weftStreamSynchronize(ctx.setup.stream), "weftStreamSynchronize");
}

// --baseline: rounds that each time a block of weft's calls and then a block of the peer's on
// the same buffers, so that both see the same machine state; the medians per call.
constexpr int kBaselineRounds = 5;

void timeWithBaseline(const Context& ctx, const Call& call, ModeResult& m, double& baselineUs) {
  const Baseline& peer = *ctx.setup.baseline;
  const int block = std::max(1, (ctx.options.iters + kBaselineRounds - 1) / kBaselineRounds);
  peer.run(call, ctx.options.warmupIters);
  std::vector<double> weftTimes, peerTimes;
  for (int r = 0; r < kBaselineRounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    runCalls(ctx, call, block);
    const auto middle = std::chrono::steady_clock::now();
    peer.run(call, block);
    const auto stop = std::chrono::steady_clock::now();
    weftTimes.push_back(std::chrono::duration<double, std::micro>(middle - start).count() / block);
    peerTimes.push_back(std::chrono::duration<double, std::micro>(stop - middle).count() / block);
  }
  m.timeUs = median(weftTimes);
  baselineUs = median(peerTimes);
}

// One mode of one row on this rank: wrong elements (-1 unchecked) and the time per call. With
// --baseline (out of place, when the peer has the datatype and operator) the time is weft's
// median over rounds alternating with the peer's, whose median goes to *baselineUs.
ModeResult runMode(const Context& ctx, Call call, const Layout& layout, ValueSpec spec,
                   bool inPlace, double* baselineUs = nullptr) {
  const RankSetup& s = ctx.setup;
  const Options& o = ctx.options;
  ModeResult m;
  if (!hasMode(o.collective, inPlace)) {
    m.ran = false;
    return m;
  }
  const size_t ts = datatypeInfo(call.datatype).size;
  const BufferPointers p =
      placeBuffers(layout, inPlace, s.rank, ctx.buffers[kSendBuffer], ctx.buffers[kRecvBuffer], ts);
  call.sendbuff = p.send;
  call.recvbuff = p.recv;
  if (o.checkIters > 0) {
    const BufferPlan plan = planBuffers(o.collective, layout, inPlace, s.rank, s.nranks, o.root);
    m.wrong = 0;
    const uint64_t salt = spec.salt;
    for (int c = 0; c < o.checkIters; ++c) {
      spec.salt = salt + static_cast<uint64_t>(c) * 0x100000001b3ULL;
      fillBuffers(plan, ctx.buffers, spec);
      runCalls(ctx, call, 1);
      m.wrong += static_cast<int64_t>(countWrong(plan, ctx.buffers, spec));
    }
  }
  runCalls(ctx, call, o.warmupIters);
  if (baselineUs != nullptr && s.baseline != nullptr && s.baseline->supports(call)) {
    timeWithBaseline(ctx, call, m, *baselineUs);
    return m;
  }
  const auto start = std::chrono::steady_clock::now();
  runCalls(ctx, call, o.iters);
  const auto stop = std::chrono::steady_clock::now();
  m.timeUs = std::chrono::duration<double, std::micro>(stop - start).count() / o.iters;
  return m;
}

// Combines the two modes' times and the baseline's (per -a) and wrong counts over the ranks.
void combineOverRanks(const Context& ctx, ModeResult& outOfPlace, ModeResult& inPlace,
                      double& baselineUs) {
  const RankSetup& s = ctx.setup;
  double times[3] = {outOfPlace.timeUs, inPlace.timeUs, baselineUs};
  switch (ctx.options.combine) {
    case TimeCombine::Rank0:
      ensure(s, weftBroadcast(times, times, 3, weftFloat64, 0, s.comm, nullptr), "weftBroadcast");
      break;
    case TimeCombine::Average:
      ensure(s, weftAllReduce(times, times, 3, weftFloat64, weftSum, s.comm, nullptr),
             "weftAllReduce");
      for (double& t : times) t /= s.nranks;
      break;
    case TimeCombine::Min:
    case TimeCombine::Max: {
      const weftRedOp_t op = ctx.options.combine == TimeCombine::Min ? weftMin : weftMax;
      ensure(s, weftAllReduce(times, times, 3, weftFloat64, op, s.comm, nullptr), "weftAllReduce");
      break;
    }
  }
  outOfPlace.timeUs = times[0];
  inPlace.timeUs = times[1];
  baselineUs = times[2];
  if (ctx.options.checkIters > 0) {
    // A mode that was not verified (-1) is so on every rank, and stays -1.
    int64_t wrong[2] = {std::max<int64_t>(outOfPlace.wrong, 0),
                        std::max<int64_t>(inPlace.wrong, 0)};
    ensure(s, weftAllReduce(wrong, wrong, 2, weftInt64, weftSum, s.comm, nullptr), "weftAllReduce");
    if (outOfPlace.wrong >= 0) outOfPlace.wrong = wrong[0];
    if (inPlace.wrong >= 0) inPlace.wrong = wrong[1];
  }
}

}  // namespace

void ensure(const RankSetup& setup, weftResult_t result, const char* function) {
  if (result == weftSuccess) return;
  std::string last = weftGetLastError(setup.comm);
  if (last.empty()) last = weftGetLastError(nullptr);
  std::fflush(stdout);
  const std::string who = setup.rank >= 0 ? fmt::format("rank {}: ", setup.rank) : "";
  fmt::print(stderr, "weft-perf: {}{} failed: {}: {}\n", who, function, weftGetErrorString(result),
             last);
  std::fflush(stderr);
  // Not exit(): other ranks' threads may be inside weft; the process ends here, at once.
  std::_Exit(1);
}

uint64_t runSweep(const Options& o, const RankSetup& s,
                  const std::function<void(const Row&)>& onRow) {
  const std::vector<uint64_t> sizes = sweepSizes(o);
  uint64_t sendBytes = 0, recvBytes = 0;
  for (const uint64_t size : sizes)
    for (const weftDataType_t t : o.datatypes) {
      const size_t ts = datatypeInfo(t).size;
      const Layout l = layoutFor(o.collective, size, ts, s.nranks);
      sendBytes = std::max(sendBytes, l.sendCount * ts);
      recvBytes = std::max(recvBytes, l.inPlaceCount() * ts);
    }
  const GuardedBuffer send(sendBytes, s, o.registered), recv(recvBytes, s, o.registered);
  const Context ctx{o, s, {send.data(), recv.data()}};

  std::vector<std::optional<ReduceOp>> ops;
  if (isReducing(o.collective))
    ops.assign(o.ops.begin(), o.ops.end());
  else
    ops.push_back(std::nullopt);

  uint64_t wrong = 0;
  for (size_t si = 0; si < sizes.size(); ++si) {
    for (const weftDataType_t type : o.datatypes) {
      const DatatypeInfo& info = datatypeInfo(type);
      const Layout layout = layoutFor(o.collective, sizes[si], info.size, s.nranks);
      for (const std::optional<ReduceOp>& op : ops) {
        Call call;
        call.collective = o.collective;
        call.count = layout.count;
        call.datatype = type;
        call.root = o.root;
        call.rank = s.rank;
        call.nranks = s.nranks;
        const bool preMul = op == ReduceOp::PreMulSum;
        if (preMul) {
          uint64_t scalar = preMulScalarBits(type);  // little-endian: the low bytes come first
          ensure(s,
                 weftRedOpCreatePreMulSum(&call.op, &scalar, type, weftScalarHostImmediate, s.comm),
                 "weftRedOpCreatePreMulSum");
        } else if (op) {
          call.op = builtinOp(*op);
        }
        ValueSpec spec{type, op, s.nranks, 0};
        spec.salt = (uint64_t{si} << 24) ^ (uint64_t(type) << 8) ^ (op ? uint64_t(*op) + 1 : 0);
        Row row;
        row.bytes = layout.bytes;
        row.count = layout.count;
        row.type = std::string(info.name);
        row.redop = op ? std::string(reduceOpLabel(*op)) : "none";
        row.root = isRooted(o.collective) ? o.root : -1;
        row.baseline = s.baseline != nullptr;
        row.outOfPlace = runMode(ctx, call, layout, spec, false, &row.baselineUs);
        spec.salt ^= uint64_t{1} << 60;
        row.inPlace = runMode(ctx, call, layout, spec, true);
        if (preMul) ensure(s, weftRedOpDestroy(call.op, s.comm), "weftRedOpDestroy");
        combineOverRanks(ctx, row.outOfPlace, row.inPlace, row.baselineUs);
        const double factor = busBandwidthFactor(o.collective, s.nranks);
        for (ModeResult* m : {&row.outOfPlace, &row.inPlace}) {
          if (!m->ran) continue;
          m->algbw = algorithmBandwidth(layout.bytes, m->timeUs);
          m->busbw = m->algbw * factor;
          if (m->wrong > 0) wrong += static_cast<uint64_t>(m->wrong);
        }
        if (s.rank == 0) onRow(row);
      }
    }
  }
  return wrong;
}

}  // namespace weft::perf
