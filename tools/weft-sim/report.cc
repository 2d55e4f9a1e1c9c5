#include "report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "algorithms/reduce/datatype.hpp"

namespace weft::sim {
namespace {

constexpr int kAlgoColumn = 16;  // "  time   busbw" per algorithm

double busbw(const Options& o, uint64_t bytes, double seconds) {
  if (seconds <= 0) return 0;
  return static_cast<double>(bytes) / seconds / 1e9 * busBandwidthFactor(o.collective, o.ranks);
}

// Two decimals while that fits 8 characters, then fewer.
std::string formatTime(double us) {
  const int decimals = us < 99999.995 ? 2 : us < 999999.95 ? 1 : 0;
  return fmt::format("{:8.{}f}", us, decimals);
}

std::string linkText(const LinkParams& l) {
  return fmt::format("lat={}us,bw={}GB/s,msg={}us", l.latencyUs, l.bandwidthGBps, l.messageUs);
}

const char* redopText(const Options& o) {
  switch (o.collective) {
    case Collective::AllReduce:
    case Collective::Reduce:
    case Collective::ReduceScatter: return "sum";
    default: return "none";
  }
}

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The parameters of the link class between the ranks of a host (before oversubscription).
const LinkParams& intraLink(const Options& o, const MachineParams& m) {
  return m.link(o.transport == "shm" ? LinkClass::Shm : LinkClass::Ucx);
}

}  // namespace

std::string formatTable(const Options& o, const std::vector<SizeResult>& results) {
  const MachineParams m = machineParams(o);
  std::string s = fmt::format("# Collective simulation: {} (weft-sim: predicted, not measured)\n",
                              collectiveName(o.collective));
  s += fmt::format(
      "# nranks {} ranksPerHost {} hosts {} intra {} ({}) inter {} reduce {} GB/s copy {} "
      "GB/s cores {} ({})\n",
      o.ranks, o.ranksPerHost, (o.ranks + o.ranksPerHost - 1) / o.ranksPerHost,
      linkText(intraLink(o, m)), o.transport, linkText(m.net), m.reduceRate(o.datatype), m.copyGBps,
      m.cores > 0 ? fmt::format("{:g}", m.cores) : std::string("one per rank"),
      o.tuneFile.empty() ? "command line" : o.tuneFile);
  s += "#\n";
  if (results.empty()) return s + "# (no sizes)\n";
  std::string names, units;
  for (const Candidate& c : results.front().priced) {
    names += fmt::format("  {:>{}}", std::string(c.algorithm->name).substr(0, kAlgoColumn - 2),
                         kAlgoColumn - 2);
    units += fmt::format("  {:>8}  {:>6}", "time(us)", "busbw");
  }
  s += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}{}  {:>18}\n", "size", "count", "type",
                   "redop", "root", names, "tuner's pick");
  s += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}{}  {:>18}\n", "(B)", "(elements)", "", "",
                   "", units, "(chunk x channels)");
  for (const SizeResult& r : results) {
    s += fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", r.bytes, r.count,
                     datatypeName(o.datatype), redopText(o), 0);
    for (const Candidate& c : r.priced)
      s += fmt::format("  {}  {:6.2f}", formatTime(c.seconds * 1e6), busbw(o, r.bytes, c.seconds));
    // Chunk size and channels only where the schedule pipelines in chunks.
    std::string pick = r.pick.algorithm ? r.pick.algorithm->name : "native";
    if (r.pick.algorithm && r.pick.algorithm->usesChunks(o.collective))
      pick += r.pick.chunkBytes >= (1u << 20)
                  ? fmt::format(" {}Mx{}", r.pick.chunkBytes >> 20, r.pick.channels)
                  : fmt::format(" {}Kx{}", r.pick.chunkBytes >> 10, r.pick.channels);
    s += fmt::format("  {:>18}\n", pick);
  }
  return s;
}

std::string formatJson(const Options& o, const std::vector<SizeResult>& results) {
  const MachineParams m = machineParams(o);
  std::string rows;
  for (const SizeResult& r : results) {
    std::string algos;
    for (const Candidate& c : r.priced)
      algos += fmt::format(
          "{}{{\"algorithm\": {}, \"time_us\": {}, \"busbw_gbps\": {}, \"chunk_bytes\": {}, "
          "\"channels\": {}}}",
          algos.empty() ? "" : ", ", jsonString(c.algorithm->name), c.seconds * 1e6,
          busbw(o, r.bytes, c.seconds), c.chunkBytes, c.channels);
    rows += fmt::format(
        "{}\n    {{\"size\": {}, \"count\": {}, \"type\": {}, \"algorithms\": [{}], "
        "\"pick\": {{\"algorithm\": {}, \"time_us\": {}, \"chunk_bytes\": {}, \"channels\": {}}}}}",
        rows.empty() ? "" : ",", r.bytes, r.count, jsonString(datatypeName(o.datatype)), algos,
        jsonString(r.pick.algorithm ? r.pick.algorithm->name : "native"),
        r.pick.predictedSeconds >= 0 ? fmt::format("{}", r.pick.predictedSeconds * 1e6)
                                     : std::string("null"),
        r.pick.chunkBytes, r.pick.channels);
  }
  std::string s = "{\n  \"tool\": \"weft-sim\",\n";
  s += fmt::format("  \"collective\": {},\n", jsonString(collectiveName(o.collective)));
  s += fmt::format(
      "  \"machine\": {{\"nranks\": {}, \"ranks_per_host\": {}, \"transport\": {}, "
      "\"intra\": {{\"latency_us\": {}, \"bandwidth_gbps\": {}, \"message_us\": {}}}, "
      "\"inter\": {{\"latency_us\": {}, \"bandwidth_gbps\": {}, \"message_us\": {}}}, "
      "\"reduce_gbps\": {}, \"copy_gbps\": {}, \"cores\": {}}},\n",
      o.ranks, o.ranksPerHost, jsonString(o.transport), intraLink(o, m).latencyUs,
      intraLink(o, m).bandwidthGBps, intraLink(o, m).messageUs, m.net.latencyUs,
      m.net.bandwidthGBps, m.net.messageUs, m.reduceRate(o.datatype), m.copyGBps, m.cores);
  s += fmt::format("  \"results\": [{}\n  ]\n}}\n", rows);
  return s;
}

}  // namespace weft::sim
