#include "report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "algorithms/shm/path_trials.hpp"

namespace weft::perf {
namespace {

std::string versionString(int v) {
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

// Two decimals while that fits the 7-character column (below 10 ms), then fewer, so that the
// columns stay aligned up to 10 s.
std::string formatTime(double us) {
  const int decimals = us < 9999.995 ? 2 : us < 99999.95 ? 1 : 0;  // after rounding
  return fmt::format("{:7.{}f}", us, decimals);
}

std::string formatMode(const ModeResult& m) {
  if (!m.ran) return fmt::format("  {:>7}  {:>6}  {:>6}  {:>5}", "N/A", "N/A", "N/A", "N/A");
  const std::string wrong = m.wrong < 0 ? std::string("N/A") : fmt::format("{}", m.wrong);
  return fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", formatTime(m.timeUs), m.algbw, m.busbw,
                     wrong);
}

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// JSON has no inf or NaN.
std::string jsonNumber(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : "null";
}

std::string jsonMode(const ModeResult& m) {
  if (!m.ran) return "null";
  return fmt::format("{{\"time_us\": {}, \"algbw_gbps\": {}, \"busbw_gbps\": {}, \"wrong\": {}}}",
                     jsonNumber(m.timeUs), jsonNumber(m.algbw), jsonNumber(m.busbw),
                     m.wrong < 0 ? std::string("null") : fmt::format("{}", m.wrong));
}

std::string stepText(const Options& o) {
  return o.stepBytes > 0 ? fmt::format("{}(bytes)", o.stepBytes)
                         : fmt::format("{}(factor)", o.stepFactor);
}

// Whether weft may try paths on this run's first calls (algorithms/shm/path_trials.hpp): its
// ranks are processes, more than one, with buffers of their own.
bool triesPaths(const RunInfo& run) {
  return run.threads == 1 && run.nranks > 1 && !run.options.registered;
}

}  // namespace

std::string formatHeader(const RunInfo& run) {
  const Options& o = run.options;
  std::string s = fmt::format("# Collective test starting: {} (weft-perf, weft {})\n",
                              collectiveName(o.collective), versionString(run.version));
  s += fmt::format(
      "# nThread {} nGpus 1 minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} agg "
      "iters: 1 validation: {} graph: 0\n",
      run.threads, o.minBytes, o.maxBytes, stepText(o), o.warmupIters, o.iters, o.checkIters);
  if (o.blocking) s += "# Blocking Enabled: every operation is a blocking call on a NULL stream\n";
  if (triesPaths(run) && o.checkIters + o.warmupIters < PathTrials::kTuningCalls)
    s += fmt::format(
        "# Path trials: ranks that are processes try ways of reaching each other on the first {0} "
        "calls of a size (WEFT_SHM_TUNE), so the times can include them: -w {0} leaves them "
        "out\n",
        PathTrials::kTuningCalls);
  s += "#\n# Using devices\n";
  for (const RankInfo& r : run.ranks)
    s += fmt::format("#  Rank {:2} Group  0 Pid {:6} on {:>10} device {:2} [cpu]\n", r.rank, r.pid,
                     r.host, r.rank % run.threads);
  s += "#\n";
  s += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       "
      "in-place          {}\n",
      "", "", "", "", "", o.baselineMpi ? "    baseline (out-of-place)" : "");
  s += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6} {:>6}  {:>7}  {:>6}  {:>6} "
      "{:>6}\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
      "busbw", o.baselineMpi ? "#wrong      mpi  weft/mpi" : "#wrong");
  s += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  {:>6}  {:>6}  "
      "{:>5}\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
      o.baselineMpi ? "        (us)          " : "");
  return s;
}

std::string formatRow(const Row& row) {
  std::string baseline;
  if (row.baseline) {
    if (row.baselineUs < 0 || !row.outOfPlace.ran)
      baseline = fmt::format("  {:>7}  {:>8}", "N/A", "N/A");
    else
      baseline = fmt::format("  {}  {:8.2f}", formatTime(row.baselineUs),
                             row.baselineUs > 0 ? row.outOfPlace.timeUs / row.baselineUs : 0.0);
  }
  return fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.bytes, row.count, row.type,
                     row.redop, row.root) +
         formatMode(row.outOfPlace) + formatMode(row.inPlace) + baseline + "\n";
}

double averageBusBandwidth(const std::vector<Row>& rows) {
  double sum = 0;
  int modes = 0;
  for (const Row& r : rows)
    for (const ModeResult* m : {&r.outOfPlace, &r.inPlace})
      if (m->ran) {
        sum += m->busbw;
        ++modes;
      }
  return modes ? sum / modes : 0;
}

std::string formatFooter(uint64_t wrong, double avgBusBw) {
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:g} \n#\n", wrong,
                     wrong == 0 ? "OK" : "FAILED", avgBusBw);
}

std::string formatJson(const RunInfo& run, const std::vector<Row>& rows, uint64_t wrong,
                       double avgBusBw) {
  const Options& o = run.options;
  std::string types, ops, ranks, results;
  for (const weftDataType_t t : o.datatypes)
    types += (types.empty() ? "" : ", ") + jsonString(datatypeInfo(t).name);
  for (const ReduceOp op : o.ops) ops += (ops.empty() ? "" : ", ") + jsonString(reduceOpLabel(op));
  for (const RankInfo& r : run.ranks)
    ranks += fmt::format("{}\n    {{\"rank\": {}, \"pid\": {}, \"host\": {}}}",
                         ranks.empty() ? "" : ",", r.rank, r.pid, jsonString(r.host));
  for (const Row& r : rows)
    results += fmt::format(
        "{}\n    {{\"size\": {}, \"count\": {}, \"type\": {}, \"redop\": {}, \"root\": {}, "
        "\"out_of_place\": {}, \"in_place\": {}{}}}",
        results.empty() ? "" : ",", r.bytes, r.count, jsonString(r.type), jsonString(r.redop),
        r.root, jsonMode(r.outOfPlace), jsonMode(r.inPlace),
        !r.baseline ? std::string()
        : r.baselineUs < 0
            ? std::string(", \"mpi_time_us\": null")
            : fmt::format(", \"mpi_time_us\": {}", jsonNumber(r.baselineUs)));
  std::string s = "{\n";
  s += fmt::format("  \"tool\": \"weft-perf\",\n  \"weft_version\": {},\n",
                   jsonString(versionString(run.version)));
  s += fmt::format("  \"collective\": {},\n", jsonString(collectiveName(o.collective)));
  s += fmt::format(
      "  \"parameters\": {{\"nranks\": {}, \"threads\": {}, \"min_bytes\": {}, \"max_bytes\": {}, "
      "\"step_factor\": {}, \"step_bytes\": {}, \"iters\": {}, \"warmup_iters\": {}, "
      "\"check_iters\": {}, \"datatypes\": [{}], \"ops\": [{}], \"root\": {}, \"average\": {}, "
      "\"blocking\": {}}},\n",
      run.nranks, run.threads, o.minBytes, o.maxBytes,
      o.stepBytes > 0 ? std::string("null") : fmt::format("{}", o.stepFactor),
      o.stepBytes > 0 ? fmt::format("{}", o.stepBytes) : std::string("null"), o.iters,
      o.warmupIters, o.checkIters, types, ops, o.root, static_cast<int>(o.combine),
      o.blocking ? 1 : 0);
  s += fmt::format("  \"ranks\": [{}\n  ],\n", ranks);
  s += fmt::format("  \"results\": [{}\n  ],\n", results);
  s += fmt::format("  \"wrong\": {},\n  \"avg_busbw_gbps\": {}\n}}\n", wrong, jsonNumber(avgBusBw));
  return s;
}

}  // namespace weft::perf
