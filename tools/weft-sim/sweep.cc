#include "sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "algorithms/reduce/datatype.hpp"

namespace weft::sim {
namespace {

// Collectives whose count is per rank: nccl-tests divides the size by the rank count.
bool splitPerRank(Collective c) {
  return c == Collective::AllGather || c == Collective::ReduceScatter ||
         c == Collective::AlltoAll || c == Collective::Gather || c == Collective::Scatter;
}

}  // namespace

MachineParams machineParams(const Options& o) {
  MachineParams p = o.tuneFile.empty() ? MachineParams{} : loadTuneFile(o.tuneFile);
  if (o.intraSet || o.tuneFile.empty()) p.shm = p.ucx = o.intra;
  if (o.interSet || o.tuneFile.empty()) p.net = o.inter;
  if (o.reduceGBps > 0) {
    p.reduceGBps = o.reduceGBps;
    p.reduceGBpsByType = {};
  }
  if (o.copyGBps > 0) p.copyGBps = o.copyGBps;
  if (o.cores >= 0) p.cores = o.cores;
  return p;
}

std::vector<uint64_t> sweepSizes(const Options& o) {
  std::vector<uint64_t> sizes;
  double size = static_cast<double>(o.minBytes);
  while (size <= static_cast<double>(o.maxBytes) * (1 + 1e-12)) {
    sizes.push_back(static_cast<uint64_t>(std::llround(size)));
    size = size == 0 ? 1 : size * o.stepFactor;
  }
  return sizes;
}

double busBandwidthFactor(Collective c, int n) {
  if (n <= 1) return 1;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AlltoAll:
    case Collective::Gather:
    case Collective::Scatter: return static_cast<double>(n - 1) / n;
    default: return 1;
  }
}

std::vector<SizeResult> simulateSweep(const Options& o) {
  TunerSettings settings;
  settings.selection = parseAlgoSelection(o.algo);
  settings.machine = machineParams(o);
  Tuner tuner(o.ranks, o.ranksPerHost, settings);
  const uint64_t elem = datatypeSize(o.datatype);
  std::vector<SizeResult> out;
  for (uint64_t requested : sweepSizes(o)) {
    SizeResult r;
    r.count = requested / elem;
    if (splitPerRank(o.collective)) r.count /= static_cast<uint64_t>(o.ranks);
    r.bytes = r.count * elem * (splitPerRank(o.collective) ? o.ranks : 1);
    out.push_back(r);
  }
  // Sizes are priced in parallel (the tuner's price() is const); the largest first, so that
  // the workers finish together.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < out.size();) {
      SizeResult& r = out[out.size() - 1 - i];
      r.priced = tuner.price(o.collective, r.count * elem, o.datatype, o.transport);
    }
  };
  const unsigned workers =
      std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(out.size()));
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (SizeResult& r : out) {
    const uint64_t callBytes = r.count * elem;
    if (callBytes > 1 && (callBytes & (callBytes - 1)) == 0 && !r.priced.empty()) {
      // The tuner prices a size bucket at its lower bound: this very size. Its pick is the
      // cheapest of what was just priced (search.hpp), without pricing it again.
      const Candidate best = cheapest(r.priced);
      r.pick.algorithm = best.algorithm;
      r.pick.chunkBytes = tagSafeChunk(best.chunkBytes, callBytes);
      r.pick.channels = best.channels;
      r.pick.predictedSeconds = best.seconds;
    } else {
      r.pick = tuner.choose(o.collective, callBytes, o.datatype, {}, false, o.transport);
    }
  }
  return out;
}

}  // namespace weft::sim
