#include "calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/cost/tune_file.hpp"
#include "algorithms/reduce/reduce.hpp"
#include "calibration_fit.hpp"
#include "datatypes.hpp"
#include "lib/base/cpus.hpp"
#include "lib/base/env.hpp"
#include "median.hpp"

namespace weft::perf {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kBurstMessages = 32;
constexpr int kRounds = 5;
constexpr uint64_t kOperandBytes = uint64_t{4} << 20;
// Up to where the caches no longer matter: a 64 MiB exchange touches 128 MiB per rank, and is
// still a third slower per byte than a 16 MiB one on the 2-core build machines.
constexpr uint64_t kLargeSizes[] = {uint64_t{64} << 10, uint64_t{256} << 10, uint64_t{1} << 20,
                                    uint64_t{4} << 20,  uint64_t{16} << 20,  uint64_t{64} << 20};
// Between hosts the caches do not set the rate: sizes up to 4 MiB fit the link, and larger ones
// only take time (26 exchanges of 64 MiB take 7 s at 2 Gbit/s).
constexpr uint64_t kLargestNetBytes = uint64_t{4} << 20;

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void barrier(const RankSetup& s) {
  int token = 0;
  ensure(s, weftAllReduce(&token, &token, 1, weftInt32, weftSum, s.comm, nullptr), "weftAllReduce");
}

// The slowest rank's value: a collective ends when its last rank does.
double slowest(const RankSetup& s, double value) {
  ensure(s, weftAllReduce(&value, &value, 1, weftFloat64, weftMax, s.comm, nullptr),
         "weftAllReduce");
  return value;
}

// Median over kRounds of the slowest rank's mean time for `body`, run `iters` times after a
// barrier (and `iters / 10 + 1` untimed times first).
template <typename Body>
double timed(const RankSetup& s, int iters, const Body& body) {
  for (int i = 0; i < iters / 10 + 1; ++i) body();
  std::vector<double> rounds;
  for (int round = 0; round < kRounds; ++round) {
    barrier(s);
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < iters; ++i) body();
    rounds.push_back(slowest(s, seconds(start) / iters));
  }
  return median(rounds);
}

// One ring exchange: `messages` messages of `bytes` to the next rank and as many from the
// previous one, in one group (a ring schedule's step), then `after(send, recv)`.
template <typename After>
double ringExchange(const RankSetup& s, uint64_t bytes, int messages, int iters,
                    const After& after) {
  std::vector<uint8_t> send(bytes * messages, 1), recv(bytes * messages);
  const int next = (s.rank + 1) % s.nranks, prev = (s.rank + s.nranks - 1) % s.nranks;
  return timed(s, iters, [&] {
    ensure(s, weftGroupStart(), "weftGroupStart");
    for (int m = 0; m < messages; ++m) {
      ensure(s, weftSend(send.data() + m * bytes, bytes, weftUint8, next, s.comm, nullptr),
             "weftSend");
      ensure(s, weftRecv(recv.data() + m * bytes, bytes, weftUint8, prev, s.comm, nullptr),
             "weftRecv");
    }
    ensure(s, weftGroupEnd(), "weftGroupEnd");
    after(send.data(), recv.data());
  });
}

double ringExchange(const RankSetup& s, uint64_t bytes, int messages, int iters) {
  return ringExchange(s, bytes, messages, iters, [](uint8_t*, const uint8_t*) {});
}

int exchangeIters(uint64_t bytes) {
  return static_cast<int>(std::clamp<uint64_t>((uint64_t{256} << 20) / bytes, 5, 200));
}

// Bytes of one operand per second, every rank working at once.
double rate(const RankSetup& s, uint64_t bytes, int reps, const auto& body) {
  return static_cast<double>(bytes) / timed(s, reps, body) / 1e9;
}

int hostCores() {
  return static_cast<int>(allowedCpus().size());
}

MachineParams existing(const std::string& path) {
  std::ifstream probe(path);
  if (!probe) return MachineParams{};
  return loadTuneFile(path);
}

std::string temporaryBeside(const std::string& path) {
  return path + ".tmp";
}

void cannotWrite(const Options& o) {
  fmt::print(stderr, "weft-perf: --calibrate {}: cannot write it: {}\n", o.calibratePath,
             std::strerror(errno));
}

// Whether save() will be able to create its temporary (checked before measuring, which takes a
// minute or more); a message when not.
bool canSave(const Options& o) {
  const std::string tmp = temporaryBeside(o.calibratePath);
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    cannotWrite(o);
    return false;
  }
  std::fclose(f);
  std::remove(tmp.c_str());
  return true;
}

// Rank 0 replaces the file atomically (a temporary beside it, then rename). Returns the exit
// status: 1 after a message when it cannot.
int save(const Options& o, const MachineParams& params) {
  const std::string text = formatTuneFile(params);
  const std::string tmp = temporaryBeside(o.calibratePath);
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), o.calibratePath.c_str()) != 0) {
    cannotWrite(o);
    std::remove(tmp.c_str());
    return 1;
  }
  fmt::print("# wrote {} (use it with WEFT_TUNE_FILE={})\n", o.calibratePath, o.calibratePath);
  return 0;
}

LinkClass linkClass(const Options& o) {
  if (o.calibrateLink == "ucx") return LinkClass::Ucx;
  if (o.calibrateLink == "net") return LinkClass::Net;
  if (o.calibrateLink == "shm") return LinkClass::Shm;
  // Unset: the transport weft uses between the ranks of one host.
  return envOrDefaults().shmDisable ? LinkClass::Ucx : LinkClass::Shm;
}

// More ranks than cores: the rates and costs of the file (measured with one rank per core)
// slow by ranks / cores in the model; what waking a rank that is not running adds on top is
// host.switch_us, from the 8-byte exchange. Everything else in the file is kept.
int calibrateOversubscribed(const Options& o, const RankSetup& s, MachineParams& params,
                            int cores) {
  int base = params.cores > 0 ? 1 : 0;
  ensure(s, weftBroadcast(&base, &base, 1, weftInt32, 0, s.comm, nullptr), "weftBroadcast");
  if (!base) {
    if (s.rank == 0)
      fmt::print(stderr,
                 "weft-perf: --calibrate {}: {} ranks on {} cores measure what oversubscription "
                 "adds to a calibration with one rank per core, and {} has none: run "
                 "'weftrun -n {} weft-perf --calibrate {}' first\n",
                 o.calibratePath, s.nranks, cores, o.calibratePath, cores, o.calibratePath);
    return 1;
  }
  const double one = ringExchange(s, 8, 1, 2000);
  if (s.rank != 0) return 0;
  const double share = static_cast<double>(s.nranks) / params.cores;
  const double modelled = (params.shm.latencyUs + params.shm.messageUs) * share;
  params.switchUs = std::max(0.0, one * 1e6 - modelled);
  fmt::print(
      "# {} ranks on {} cores: 1 x 8 B exchange {:.2f} us, {:.2f} us from the file's "
      "shm costs x {:.3g}: host.switch_us = {:.3g}\n",
      s.nranks, params.cores, one * 1e6, modelled, share, params.switchUs);
  return save(o, params);
}

}  // namespace

int runCalibration(const Options& o, const RankSetup& s) {
  const LinkClass link = linkClass(o);
  const bool rank0 = s.rank == 0;
  // Rank 0 reads the file and checks that it can write it first, so that a bad or unwritable
  // one stops the run before minutes of measuring.
  MachineParams params;
  int failed = 0;
  if (rank0) {
    try {
      params = existing(o.calibratePath);
      if (!canSave(o)) failed = 1;
    } catch (const std::exception& e) {
      fmt::print(stderr, "weft-perf: --calibrate {}: {}\n", o.calibratePath, e.what());
      failed = 1;
    }
  }
  ensure(s, weftBroadcast(&failed, &failed, 1, weftInt32, 0, s.comm, nullptr), "weftBroadcast");
  if (failed) return 1;
  const int cores = hostCores();
  if (rank0) {
    fmt::print("# weft-perf --calibrate {}: {} ranks, link {}\n", o.calibratePath, s.nranks,
               linkClassName(link));
    std::fflush(stdout);
  }
  const bool oversubscribed = cores > 0 && s.nranks > cores;
  if (link == LinkClass::Shm && oversubscribed) return calibrateOversubscribed(o, s, params, cores);
  if (link == LinkClass::Ucx && oversubscribed && rank0)
    fmt::print("# warning: {} ranks on {} cores measure UCX slowed by oversubscription, which the "
               "model adds itself (host.cores): calibrate with one rank per core\n",
               s.nranks, cores);

  const double one = ringExchange(s, 8, 1, 2000);
  const double burst = ringExchange(s, 8, kBurstMessages, 200);
  std::vector<SizeSample> large;
  for (uint64_t bytes : kLargeSizes)
    if (link != LinkClass::Net || bytes <= kLargestNetBytes)
      large.push_back(
          {static_cast<double>(bytes), ringExchange(s, bytes, 1, exchangeIters(bytes))});
  const LinkFit fit = fitLink(one, burst, kBurstMessages, large);
  LinkParams& measured = link == LinkClass::Shm   ? params.shm
                         : link == LinkClass::Ucx ? params.ucx
                                                  : params.net;
  measured = {fit.latencyUs, fit.bandwidthGBps, fit.messageUs};
  // Caches make a message's bandwidth depend on how much memory the exchange touches: one
  // point per size, so that the model matches each measurement (after the fixed costs).
  RateCurve& curve = params.bandwidthCurve[static_cast<int>(link)];
  curve = {};
  const double fixed = (fit.messageUs + fit.latencyUs) * 1e-6;
  for (const SizeSample& x : large) {
    // A point for every size: where noise (or a slow build) puts the exchange near the fixed
    // costs, its transfer is taken as at least a tenth of it.
    const double transfer = std::max(x.seconds - fixed, 0.1 * x.seconds);
    curve.add(static_cast<uint64_t>(x.bytes), x.bytes / transfer / 1e9);
  }
  if (rank0) {
    fmt::print("# ring exchange, every rank at once: 1 x 8 B {:.2f} us, {} x 8 B {:.2f} us\n",
               one * 1e6, kBurstMessages, burst * 1e6);
    fmt::print(
        "# {}: latency {:.3g} us, per message {:.3g} us, bandwidth {:.3g} GB/s (one line "
        "through all sizes)\n",
        linkClassName(link), fit.latencyUs, fit.messageUs, fit.bandwidthGBps);
    fmt::print("# {:>10}  {:>10}  {:>14}\n", "size (B)", "time (us)", "bandwidth (GB/s)");
    for (const SizeSample& x : large)
      fmt::print("  {:>10}  {:>10.2f}  {:>14.3g}\n", x.bytes, x.seconds * 1e6,
                 curve.at(static_cast<uint64_t>(x.bytes), fit.bandwidthGBps));
    std::fflush(stdout);
  }

  if (link == LinkClass::Shm) {
    // The CPU's share of a collective, every rank at once. By size, as a schedule's steps run
    // them: after an exchange, into the buffer the peer has just read (its cache lines must be
    // taken back from the peer's core first, which makes a 64 KiB reduction ~13x slower than
    // on a private buffer), with the received data as the other operand; the rate is the
    // bytes over what the step adds to the exchange alone.
    constexpr int kReps = 16;
    params.reduceCurve = params.copyCurve = {};
    const ReduceFn sum = reduceKernel(weftFloat32, ReduceKind::Sum);
    if (rank0)
      fmt::print("# {:>10}  {:>22}  {:>20}\n", "size (B)", "reduce float (GB/s)", "copy (GB/s)");
    auto stepRate = [&](const SizeSample& exchange, const auto& step) {
      const uint64_t bytes = static_cast<uint64_t>(exchange.bytes);
      const double with = ringExchange(s, bytes, 1, exchangeIters(bytes), step);
      // Never faster than noise allows: at least 1 ns per 64 bytes.
      const double added = std::max(with - exchange.seconds, exchange.bytes / 64 * 1e-9);
      return exchange.bytes / added / 1e9;
    };
    for (const SizeSample& x : large) {
      const uint64_t bytes = static_cast<uint64_t>(x.bytes);
      const double reduce = stepRate(
          x, [&](uint8_t* mine, const uint8_t* theirs) { sum(mine, mine, theirs, bytes / 4); });
      const double copy = stepRate(
          x, [&](uint8_t* mine, const uint8_t* theirs) { std::memcpy(mine, theirs, bytes); });
      params.reduceCurve.add(bytes, reduce);
      params.copyCurve.add(bytes, copy);
      if (rank0) fmt::print("  {:>10}  {:>22.3g}  {:>20.3g}\n", bytes, reduce, copy);
    }
    // Every datatype on private 4 MiB operands: how the datatypes compare (their curves are
    // float32's, scaled by these).
    std::vector<uint8_t> a(kOperandBytes), b(kOperandBytes);
    for (const DatatypeInfo& d : kDatatypes) {
      const ReduceFn kernel = reduceKernel(d.type, ReduceKind::Sum);
      const uint64_t count = kOperandBytes / d.size;
      const double gbps =
          rate(s, kOperandBytes, kReps, [&] { kernel(a.data(), a.data(), b.data(), count); });
      if (d.type == weftFloat32)
        params.reduceGBps = gbps;
      else
        params.reduceGBpsByType[static_cast<size_t>(d.type)] = gbps;
      if (rank0) fmt::print("# reduce (sum) {}: {:.3g} GB/s\n", d.name, gbps);
    }
    params.reduceGBpsByType[static_cast<size_t>(weftFloat32)] = 0;  // reduce_gbps itself
    params.copyGBps = params.copyCurve.at(kOperandBytes, 0);
    params.cores = cores;
    if (rank0) fmt::print("# copy: {:.3g} GB/s\n# host: {} cores\n", params.copyGBps, cores);
  }

  return rank0 ? save(o, params) : 0;
}

}  // namespace weft::perf
