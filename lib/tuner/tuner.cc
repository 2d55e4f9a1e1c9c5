#include "lib/tuner/tuner.hpp"

#include <algorithm>
#include <optional>

#include "algorithms/reduce/datatype.hpp"
#include "lib/base/env.hpp"
#include "lib/base/error.hpp"
#include "lib/base/log.hpp"

namespace weft {
namespace {

struct ParsedSettings {
  TunerSettings settings;
  std::optional<Error> error;
};

const ParsedSettings& parsedSettings() {
  static const ParsedSettings parsed = [] {
    ParsedSettings p;
    try {
      const Env& e = env();
      p.settings.selection = parseAlgoSelection(e.algo);
      if (!e.tuneFile.empty()) p.settings.machine = loadTuneFile(e.tuneFile);
      p.settings.chunkBytes = static_cast<uint64_t>(e.chunkBytes);
    } catch (const Error& error) {
      p.error = error;
    }
    return p;
  }();
  return parsed;
}

}  // namespace

const TunerSettings& tunerSettings() {
  const ParsedSettings& p = parsedSettings();
  if (p.error) throw *p.error;
  return p.settings;
}

int sizeBucket(uint64_t bytes) {
  int b = 0;
  while (bytes > 1) {
    bytes >>= 1;
    ++b;
  }
  return b;
}

uint64_t footprintBytes(Collective collective, uint64_t bytes, int nranks, int ranksPerHost,
                        const MachineParams& params) {
  uint64_t perRank = bytes;
  switch (collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AlltoAll:
    case Collective::Gather:
    case Collective::Scatter: perRank = bytes * static_cast<uint64_t>(std::max(1, nranks)); break;
    default: break;
  }
  // The host's ranks share its caches and memory: what they touch together, in units of what
  // calibration's ranks (one per core) touched.
  if (params.cores <= 0) return perRank;
  return static_cast<uint64_t>(static_cast<double>(perRank) * std::max(1, ranksPerHost) /
                               params.cores);
}

double oversubscription(const MachineParams& params, int ranksPerHost) {
  if (params.cores <= 0 || ranksPerHost <= params.cores) return 1;
  return static_cast<double>(ranksPerHost) / params.cores;
}

MachineModel machineFor(const MachineParams& params, int nranks, int ranksPerHost,
                        std::string_view transport, weftDataType_t datatype) {
  MachineModel m;
  m.nranks = nranks;
  m.ranksPerHost = std::clamp(ranksPerHost, 1, std::max(1, nranks));
  // Between ranks of one host: weft's shared-memory transport ("shm", or "shm+ucx" when the
  // ranks span hosts), or with WEFT_SHM_DISABLE UCX's (which picks shared memory itself);
  // between hosts: UCX over the network.
  m.intra = transport == "ucx" ? params.ucx : params.shm;
  m.intraCopiedByReceiver = transport != "ucx";
  m.inter = params.net;
  m.reduceGBps = params.reduceRate(datatype);
  m.copyGBps = params.copyGBps;
  // More ranks than cores on a host: each rank runs a cores/ranks share of the time, so all of
  // its CPU work slows by the inverse. Inside a host that is everything: a message crosses
  // shared memory as a copy by a rank's CPU, and is noticed only when its receiver runs. Between
  // hosts the wire is not slowed, only the sender's per-message work; but a message from
  // another host is noticed only when its receiver runs too, so both latencies gain the
  // switch.
  const double share = oversubscription(params, m.ranksPerHost);
  m.intra.latencyUs *= share;
  if (share > 1) {
    m.intra.latencyUs += params.switchUs;
    m.inter.latencyUs += params.switchUs;
  }
  m.intra.bandwidthGBps /= share;
  m.intra.messageUs *= share;
  m.inter.messageUs *= share;
  m.reduceGBps /= share;
  m.copyGBps /= share;
  return m;
}

Tuner::Tuner(int nranks, int ranksPerHost) : Tuner(nranks, ranksPerHost, tunerSettings()) {}

Tuner::Tuner(int nranks, int ranksPerHost, TunerSettings settings)
    : nranks_(nranks),
      ranksPerHost_(std::clamp(ranksPerHost, 1, std::max(1, nranks))),
      settings_(std::move(settings)) {}

std::vector<const Algorithm*> Tuner::allowed(Collective collective) const {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : algorithmRegistry())
    if (settings_.selection.allows(collective, a)) out.push_back(&a);
  // On one host the hierarchical schedule is a plain direct reduce-scatter and allgather: only
  // when WEFT_ALGO leaves nothing else.
  if (ranksPerHost_ >= nranks_ && out.size() > 1)
    std::erase_if(out, [](const Algorithm* a) { return a->id == AlgorithmId::Hierarchical; });
  return out;
}

std::vector<Candidate> Tuner::price(Collective collective, uint64_t bytes, weftDataType_t datatype,
                                    std::string_view transport) const {
  SearchRequest request;
  request.collective = collective;
  request.elemSize = static_cast<uint32_t>(datatypeSize(datatype));
  request.count = bytes / request.elemSize;
  request.model = machineFor(settings_.machine.atSize(footprintBytes(
                                 collective, bytes, nranks_, ranksPerHost_, settings_.machine)),
                             nranks_, ranksPerHost_, transport, datatype);
  request.algorithms = allowed(collective);
  request.chunkBytes = settings_.chunkBytes;
  return priceAlgorithms(request);
}

bool Tuner::choosesNative(Collective collective, const TunerOverrides& overrides,
                          bool nativeAvailable) const {
  return nativeAvailable && !overrides.algorithm[static_cast<int>(collective)] &&
         settings_.selection.allowsNative(collective);
}

TunerChoice Tuner::choose(Collective collective, uint64_t bytes, weftDataType_t datatype,
                          const TunerOverrides& overrides, bool nativeAvailable,
                          std::string_view transport) {
  const uint64_t fixedChunk = overrides.chunkBytes ? overrides.chunkBytes : settings_.chunkBytes;
  TunerChoice choice;
  if (const Algorithm* forced = overrides.algorithm[static_cast<int>(collective)]) {
    choice.algorithm = forced;
    choice.chunkBytes = tagSafeChunk(fixedChunk ? fixedChunk : kDefaultChunkBytes, bytes);
    choice.channels = std::max(1, overrides.channels);
    return choice;
  }
  if (choosesNative(collective, overrides, nativeAvailable)) return choice;
  const int bucket = sizeBucket(bytes);
  const Key key{collective, bucket, datatype};
  auto it = decisions_.find(key);
  if (it == decisions_.end()) {
    const std::vector<const Algorithm*> candidates = allowed(collective);
    if (candidates.empty())
      fail(weftInvalidUsage,
           "WEFT_ALGO leaves no schedule algorithm for {} ({}), and the native "
           "shared-memory collectives cannot serve this communicator",
           collectiveName(collective), settings_.selection.describe(collective));
    TunerChoice decided;
    if (nranks_ == 1) {
      // One rank: nothing to price; the first candidate, with the fixed or default chunk (0
      // here: read below, since a test's override may change between calls). A single
      // candidate left by WEFT_ALGO is still priced, so that its chunk and channels are the
      // model's, as when the tuner picks it (the default chunk made a forced hierarchical
      // allreduce across the test bed's hosts 1.2-1.7x slower than the same schedule picked).
      decided.algorithm = candidates.front();
      decided.chunkBytes = 0;
    } else {
      // The bucket is priced at its lower bound, so every size in it gets the same answer.
      const uint64_t elem = datatypeSize(datatype);
      const uint64_t priced = std::max<uint64_t>(elem, (uint64_t{1} << bucket) / elem * elem);
      const Candidate best = cheapest(price(collective, priced, datatype, transport));
      decided.algorithm = best.algorithm;
      decided.chunkBytes = best.chunkBytes;
      decided.channels = best.channels;
      decided.predictedSeconds = best.seconds;
      WEFT_INFO(kSubsysTune,
                "tuner: {} of 2^{} B ({} ranks, {} per host, {}): {} chunk {} B x{} "
                "channel(s), {:.3g} us predicted",
                collectiveName(collective), bucket, nranks_, ranksPerHost_, transport,
                best.algorithm->name, best.chunkBytes, best.channels, best.seconds * 1e6);
    }
    it = decisions_.emplace(key, decided).first;
  }
  choice = it->second;
  if (choice.chunkBytes == 0) choice.chunkBytes = fixedChunk ? fixedChunk : kDefaultChunkBytes;
  choice.chunkBytes = tagSafeChunk(choice.chunkBytes, bytes);
  return choice;
}

}  // namespace weft
