#include "listing.hpp"

#include <fmt/format.h>

#include "algorithms/reduce/datatype.hpp"
#include "algorithms/shm/shm_collectives.hpp"

namespace weft::topo {
namespace {

constexpr Collective kTunable[] = {
    Collective::AllReduce,     Collective::Broadcast, Collective::Reduce, Collective::AllGather,
    Collective::ReduceScatter, Collective::AlltoAll,  Collective::Gather, Collective::Scatter};

std::string sizeText(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0)
    return fmt::format("{}G", bytes >> 30);
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0)
    return fmt::format("{}M", bytes >> 20);
  if (bytes >= (uint64_t{1} << 10) && bytes % (uint64_t{1} << 10) == 0)
    return fmt::format("{}K", bytes >> 10);
  return fmt::format("{}", bytes);
}

std::string decisionText(const TunerChoice& c) {
  if (!c.algorithm) return "native (shared memory)";
  return fmt::format("{} chunk {} x{}", c.algorithm->name, sizeText(c.chunkBytes), c.channels);
}

}  // namespace

std::string formatAlgorithms() {
  std::string s =
      fmt::format("# {:<20} {:<60} {}\n", "algorithm", "collectives (* chunked)", "description");
  for (const Algorithm& a : algorithmRegistry()) {
    std::string served;
    for (Collective c : kTunable)
      if (a.serves(c))
        served += fmt::format("{}{}{}", served.empty() ? "" : ",", collectiveName(c),
                              a.usesChunks(c) ? "*" : "");
    s += fmt::format("  {:<20} {:<60} {}\n", a.name, served, a.description);
  }
  return s;
}

std::string formatTuning(Tuner& tuner, const CommShape& comm, uint64_t maxBytes) {
  std::string s = fmt::format(
      "# tuning for {} rank(s), {} per host, transport {}{}; WEFT_ALGO and WEFT_TUNE_FILE apply "
      "(machine: {})\n",
      comm.nranks, comm.ranksPerHost, comm.transport,
      comm.native ? ", native shared-memory collectives" : "", tuner.settings().machine.source);
  s += fmt::format("# {:<14} {:>8} {:>8}  {:<36} {:>14}\n", "collective", "from", "to", "algorithm",
                   "predicted(us)");
  for (Collective c : kTunable) {
    const bool native = comm.native && ShmCollectives::serves(c);
    uint64_t from = 1;
    TunerChoice current = tuner.choose(c, 1, weftFloat32, {}, native, comm.transport);
    auto flush = [&](uint64_t to) {
      const std::string predicted = current.predictedSeconds >= 0
                                        ? fmt::format("{:.2f}", current.predictedSeconds * 1e6)
                                        : std::string("-");
      s += fmt::format("  {:<14} {:>8} {:>8}  {:<36} {:>14}\n", collectiveName(c), sizeText(from),
                       sizeText(to), decisionText(current), predicted);
    };
    for (uint64_t bytes = 2; bytes <= maxBytes; bytes *= 2) {
      const TunerChoice next = tuner.choose(c, bytes, weftFloat32, {}, native, comm.transport);
      if (next.algorithm != current.algorithm) {  // a range shows its first size's chunking
        flush(bytes - 1);
        from = bytes;
        current = next;
      }
    }
    flush(maxBytes);
  }
  return s;
}

}  // namespace weft::topo
