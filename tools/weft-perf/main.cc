// weft-perf: nccl-tests' bandwidth sweep for weft. Ranks are the processes of a launcher
// (weftrun sets WEFT_RANK) or, without one, -t threads of this process.
#include <fmt/format.h>
#include <unistd.h>
#include <weft.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "options.hpp"
#include "report.hpp"

using namespace weft::perf;

namespace {

constexpr int kExitUsage = 2;

// Before a communicator exists, every rank of a launched job reports its own (identical)
// mistake: a launcher stops the other ranks when the first one exits, possibly before rank 0
// has printed anything.
int usageError(const std::string& message) {
  fmt::print(stderr, "weft-perf: {}\nRun 'weft-perf -h' for the flags.\n", message);
  return kExitUsage;
}

// Every rank's pid and host, gathered to all (only rank 0 uses them).
std::vector<RankInfo> gatherRanks(const RankSetup& s) {
  struct Record {
    int32_t pid;
    char host[252];
  };
  Record mine{};
  mine.pid = static_cast<int32_t>(getpid());
  if (gethostname(mine.host, sizeof mine.host - 1) != 0) std::strcpy(mine.host, "?");
  std::vector<Record> all(static_cast<size_t>(s.nranks));
  ensure(s, weftAllGather(&mine, all.data(), sizeof(Record), weftUint8, s.comm, nullptr),
         "weftAllGather");
  std::vector<RankInfo> ranks;
  for (int r = 0; r < s.nranks; ++r) ranks.push_back({r, all[r].pid, all[r].host});
  return ranks;
}

// One rank from start to end; returns its exit status.
int runRank(const Options& o, weftComm_t comm, int threads, std::FILE* json) {
  RankSetup s;
  s.comm = comm;
  ensure(s, weftCommUserRank(comm, &s.rank), "weftCommUserRank");
  ensure(s, weftCommCount(comm, &s.nranks), "weftCommCount");
  if (isRooted(o.collective) && o.root >= s.nranks) {
    // Every rank gets here; rank 0 speaks, and the destroy below (a barrier) lets it finish.
    if (s.rank == 0)
      usageError(fmt::format("-r {}: the root must be a rank below {}", o.root, s.nranks));
    ensure(s, weftCommDestroy(comm), "weftCommDestroy");
    return kExitUsage;
  }
  if (!o.blocking) ensure(s, weftStreamCreate(&s.stream), "weftStreamCreate");

  RunInfo run;
  run.options = o;
  run.nranks = s.nranks;
  run.threads = threads;
  ensure(s, weftGetVersion(&run.version), "weftGetVersion");
  run.ranks = gatherRanks(s);
  std::vector<Row> rows;
  if (s.rank == 0) {
    fmt::print("{}", formatHeader(run));
    std::fflush(stdout);
  }
  const uint64_t wrong = runSweep(o, s, [&](const Row& row) {
    rows.push_back(row);
    fmt::print("{}", formatRow(row));
    std::fflush(stdout);
  });
  if (s.rank == 0) {
    const double avg = averageBusBandwidth(rows);
    fmt::print("{}", formatFooter(wrong, avg));
    std::fflush(stdout);
    if (json != nullptr) {
      const std::string text = formatJson(run, rows, wrong, avg);
      if (std::fwrite(text.data(), 1, text.size(), json) != text.size() || std::fflush(json) != 0)
        fmt::print(stderr, "weft-perf: writing {} failed: {}\n", o.jsonPath, std::strerror(errno));
    }
  }
  if (s.stream != nullptr) ensure(s, weftStreamDestroy(s.stream), "weftStreamDestroy");
  ensure(s, weftCommDestroy(comm), "weftCommDestroy");
  return wrong > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::span<const char* const> args(argv + 1, static_cast<size_t>(argc > 0 ? argc - 1 : 0));
  const ParseOutcome parsed = parseOptions(args);
  switch (parsed.kind) {
    case ParseOutcome::Kind::Help: fmt::print("{}", usage("weft-perf")); return 0;
    case ParseOutcome::Kind::Error: return usageError(parsed.message);
    case ParseOutcome::Kind::Run: break;
  }
  const Options& o = parsed.options;
  const char* launcherRank = std::getenv("WEFT_RANK");
  const bool launched = launcherRank != nullptr;
  if (launched && o.threadsGiven && o.threads != 1)
    return usageError(
        fmt::format("-t {}: under a launcher (WEFT_RANK is set) every process is one rank; drop -t",
                    o.threads));
  if (!launched && isRooted(o.collective) && o.root >= o.threads)
    return usageError(fmt::format("-r {}: the root must be a rank below {}", o.root, o.threads));

  // Opened before any communicator exists, so that a bad path fails fast on every rank.
  std::FILE* json = nullptr;
  const bool writesJson = !o.jsonPath.empty() && (!launched || std::strcmp(launcherRank, "0") == 0);
  if (writesJson) {
    json = std::fopen(o.jsonPath.c_str(), "w");
    if (json == nullptr)
      return usageError(fmt::format("-J {}: {}", o.jsonPath, std::strerror(errno)));
  }

  int status = 0;
  if (launched) {
    weftComm_t comm = nullptr;
    RankSetup early;
    early.rank = std::atoi(launcherRank);
    ensure(early, weftCommInitFromEnv(&comm, nullptr), "weftCommInitFromEnv");
    status = runRank(o, comm, 1, json);
  } else {
    std::vector<weftComm_t> comms(static_cast<size_t>(o.threads));
    RankSetup early;
    early.rank = -1;
    ensure(early, weftCommInitAll(comms.data(), o.threads, nullptr), "weftCommInitAll");
    std::vector<int> statuses(comms.size(), 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < o.threads; ++r)
      threads.emplace_back([&, r] { statuses[r] = runRank(o, comms[r], o.threads, json); });
    for (std::thread& t : threads) t.join();
    status = *std::max_element(statuses.begin(), statuses.end());
  }
  if (json != nullptr) std::fclose(json);
  return status;
}
