#include "calibrate.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/cost/tune_file.hpp"
#include "algorithms/reduce/reduce.hpp"
#include "calibration_fit.hpp"
#include "datatypes.hpp"

namespace weft::perf {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kBurstMessages = 32;
constexpr int kRounds = 5;
constexpr uint64_t kOperandBytes = uint64_t{4} << 20;
constexpr uint64_t kLargeSizes[] = {uint64_t{64} << 10, uint64_t{256} << 10, uint64_t{1} << 20,
                                    uint64_t{4} << 20, uint64_t{16} << 20};

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void barrier(const RankSetup& s) {
  int token = 0;
  ensure(s, weftAllReduce(&token, &token, 1, weftInt32, weftSum, s.comm, nullptr),
         "weftAllReduce");
}

// The slowest rank's value: a collective ends when its last rank does.
double slowest(const RankSetup& s, double value) {
  ensure(s, weftAllReduce(&value, &value, 1, weftFloat64, weftMax, s.comm, nullptr),
         "weftAllReduce");
  return value;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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
// previous one, in one group (a ring schedule's step).
double ringExchange(const RankSetup& s, uint64_t bytes, int messages, int iters) {
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
  });
}

// Bytes of one operand per second, every rank working at once.
double rate(const RankSetup& s, uint64_t bytes, int reps, const auto& body) {
  return static_cast<double>(bytes) / timed(s, reps, body) / 1e9;
}

int hostCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

MachineParams existing(const std::string& path) {
  std::ifstream probe(path);
  if (!probe) return MachineParams{};
  return loadTuneFile(path);
}

bool writeAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

LinkClass linkClass(const Options& o) {
  if (o.calibrateLink == "ucx") return LinkClass::Ucx;
  if (o.calibrateLink == "net") return LinkClass::Net;
  if (o.calibrateLink == "shm") return LinkClass::Shm;
  // Unset: the transport weft uses between the ranks of one host.
  const char* disabled = std::getenv("WEFT_SHM_DISABLE");
  return disabled != nullptr && std::strcmp(disabled, "1") == 0 ? LinkClass::Ucx : LinkClass::Shm;
}

}  // namespace

int runCalibration(const Options& o, const RankSetup& s) {
  const LinkClass link = linkClass(o);
  const bool rank0 = s.rank == 0;
  // Rank 0 reads the file first, so that a bad one stops the run before minutes of measuring.
  MachineParams params;
  int failed = 0;
  if (rank0) {
    try {
      params = existing(o.calibratePath);
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
    if (link != LinkClass::Net && cores > 0 && s.nranks > cores)
      fmt::print("# warning: {} ranks on {} cores measure oversubscription, which the model "
                 "adds itself (host.cores): calibrate with one rank per core\n",
                 s.nranks, cores);
    std::fflush(stdout);
  }

  const double one = ringExchange(s, 8, 1, 2000);
  const double burst = ringExchange(s, 8, kBurstMessages, 200);
  std::vector<SizeSample> large;
  for (uint64_t bytes : kLargeSizes) {
    const int iters = static_cast<int>(std::clamp<uint64_t>((uint64_t{256} << 20) / bytes, 5, 200));
    large.push_back({static_cast<double>(bytes), ringExchange(s, bytes, 1, iters)});
  }
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
  for (const SizeSample& x : large)
    if (x.seconds > fixed) curve.add(static_cast<uint64_t>(x.bytes), x.bytes / (x.seconds - fixed) / 1e9);
  if (rank0) {
    fmt::print("# ring exchange, every rank at once: 1 x 8 B {:.2f} us, {} x 8 B {:.2f} us\n",
               one * 1e6, kBurstMessages, burst * 1e6);
    fmt::print("# {}: latency {:.3g} us, per message {:.3g} us, bandwidth {:.3g} GB/s (one line "
               "through all sizes)\n",
               linkClassName(link), fit.latencyUs, fit.messageUs, fit.bandwidthGBps);
    fmt::print("# {:>10}  {:>10}  {:>14}\n", "size (B)", "time (us)", "bandwidth (GB/s)");
    for (const SizeSample& x : large)
      fmt::print("  {:>10}  {:>10.2f}  {:>14.3g}\n", x.bytes, x.seconds * 1e6,
                 curve.at(static_cast<uint64_t>(x.bytes), fit.bandwidthGBps));
    std::fflush(stdout);
  }

  if (link == LinkClass::Shm) {
    // The CPU's share of a collective: reductions and copies, every rank at once (as in a
    // collective, they share the memory system), by size (curves) and, for every datatype, on
    // 4 MiB operands (each datatype's curve is float32's, scaled).
    std::vector<uint8_t> a(kLargeSizes[std::size(kLargeSizes) - 1]), b(a.size());
    constexpr int kReps = 16;
    params.reduceCurve = params.copyCurve = {};
    const ReduceFn sum = reduceKernel(weftFloat32, ReduceKind::Sum);
    if (rank0) fmt::print("# {:>10}  {:>18}  {:>16}\n", "size (B)", "reduce float (GB/s)", "copy (GB/s)");
    for (uint64_t bytes : kLargeSizes) {
      const int reps = static_cast<int>(std::clamp<uint64_t>((uint64_t{64} << 20) / bytes, 4, 1000));
      const double reduce =
          rate(s, bytes, reps, [&] { sum(a.data(), a.data(), b.data(), bytes / 4); });
      const double copy = rate(s, bytes, reps, [&] { std::memcpy(a.data(), b.data(), bytes); });
      params.reduceCurve.add(bytes, reduce);
      params.copyCurve.add(bytes, copy);
      if (rank0) fmt::print("  {:>10}  {:>18.3g}  {:>16.3g}\n", bytes, reduce, copy);
    }
    for (const DatatypeInfo& d : kDatatypes) {
      const ReduceFn kernel = reduceKernel(d.type, ReduceKind::Sum);
      const uint64_t count = kOperandBytes / d.size;
      const double gbps = rate(s, kOperandBytes, kReps,
                               [&] { kernel(a.data(), a.data(), b.data(), count); });
      if (d.type == weftFloat32)
        params.reduceGBps = gbps;
      else
        params.reduceGBpsByType[static_cast<size_t>(d.type)] = gbps;
      if (rank0) fmt::print("# reduce (sum) {}: {:.3g} GB/s\n", d.name, gbps);
    }
    params.reduceGBpsByType[static_cast<size_t>(weftFloat32)] = 0;  // reduce_gbps itself
    params.copyGBps =
        rate(s, kOperandBytes, kReps, [&] { std::memcpy(a.data(), b.data(), kOperandBytes); });
    params.cores = cores;
    if (rank0) fmt::print("# copy: {:.3g} GB/s\n# host: {} cores\n", params.copyGBps, cores);
  }

  if (!rank0) return 0;
  if (!writeAtomically(o.calibratePath, formatTuneFile(params))) {
    fmt::print(stderr, "weft-perf: --calibrate {}: cannot write it: {}\n", o.calibratePath,
               std::strerror(errno));
    return 1;
  }
  fmt::print("# wrote {} (use it with WEFT_TUNE_FILE={})\n", o.calibratePath, o.calibratePath);
  return 0;
}

}  // namespace weft::perf
