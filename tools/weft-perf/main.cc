// weft-perf: nccl-tests' bandwidth sweep for weft. Ranks are the processes of a launcher
// (weftrun, mpirun, srun, torchrun: weftCommInitFromEnv) or, without one, -t threads of this
// process. Built as weft-perf-mpi (WEFT_PERF_MPI), the ranks are MPI's and --baseline mpi times
// MPI's collective alongside weft's.
#include <fmt/format.h>
#include <unistd.h>
#include <weft.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "calibrate.hpp"
#include "options.hpp"
#include "report.hpp"
#ifdef WEFT_PERF_MPI
#include "baseline_mpi.hpp"
#endif

using namespace weft::perf;

namespace {

constexpr int kExitUsage = 2;

// Before a communicator exists, every rank of a launched job reports its own (identical)
// mistake: a launcher stops the other ranks when the first one exits, possibly before rank 0
// has printed anything.
struct LauncherRank {
  const char* variable = nullptr;
  const char* rank = nullptr;
};

int usageError(const std::string& message) {
  fmt::print(stderr, "weft-perf: {}\nRun 'weft-perf -h' for the flags.\n", message);
  return kExitUsage;
}

#ifndef WEFT_PERF_MPI
// This process's rank when a launcher started it, in weftCommInitFromEnv's order (weftrun, a
// torchrun worker, Open MPI, Slurm, PMIx, torchrun-style), with the variable that says so; a
// null rank without a launcher.
LauncherRank launcherRank() {
  if (const char* v = std::getenv("WEFT_RANK")) return {"WEFT_RANK", v};
  if (std::getenv("TORCHELASTIC_RUN_ID") != nullptr)
    if (const char* v = std::getenv("RANK")) return {"RANK", v};
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK", "RANK"})
    if (const char* v = std::getenv(name)) return {name, v};
  return {};
}

// weft-perf-mpi in this program's own folder, or "" when there is none.
std::string mpiSibling() {
  std::vector<char> self(4096);
  const ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return {};
  std::string path(self.data(), static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {};
  path = path.substr(0, slash + 1) + "weft-perf-mpi";
  return ::access(path.c_str(), X_OK) == 0 ? path : std::string();
}
#endif

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
int runRank(const Options& o, weftComm_t comm, int threads, std::FILE* json,
            const Baseline* baseline = nullptr) {
  RankSetup s;
  s.comm = comm;
  s.baseline = baseline;
  ensure(s, weftCommUserRank(comm, &s.rank), "weftCommUserRank");
  ensure(s, weftCommCount(comm, &s.nranks), "weftCommCount");
  if (isRooted(o.collective) && o.root >= s.nranks) {
    // Every rank gets here; rank 0 speaks, and the destroy below (a barrier) lets it finish.
    if (s.rank == 0)
      usageError(fmt::format("-r {}: the root must be a rank below {}", o.root, s.nranks));
    ensure(s, weftCommDestroy(comm), "weftCommDestroy");
    return kExitUsage;
  }
  if (!o.calibratePath.empty()) {
    int status = kExitUsage;
    if (s.nranks < 2) {
      if (s.rank == 0) usageError("--calibrate needs at least 2 ranks: weftrun -n 2 weft-perf "
                                  "--calibrate FILE");
    } else {
      status = runCalibration(o, s);
    }
    ensure(s, weftCommDestroy(comm), "weftCommDestroy");
    return status;
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
#ifdef WEFT_PERF_MPI
  // Before anything else: MPI may take its own arguments out of argv.
  MpiSession mpi(&argc, &argv);
#endif
  const std::span<const char* const> args(argv + 1, static_cast<size_t>(argc > 0 ? argc - 1 : 0));
  const ParseOutcome parsed = parseOptions(args);
  switch (parsed.kind) {
    case ParseOutcome::Kind::Help: fmt::print("{}", usage("weft-perf")); return 0;
    case ParseOutcome::Kind::Error: return usageError(parsed.message);
    case ParseOutcome::Kind::Run: break;
  }
  const Options& o = parsed.options;
#ifdef WEFT_PERF_MPI
  // MPI's ranks, whoever launched them (a singleton without mpirun is one rank).
  const std::string mpiRank = std::to_string(mpi.rank());
  const LauncherRank launcher{"MPI_COMM_WORLD", mpiRank.c_str()};
  std::unique_ptr<Baseline> baseline = o.baselineMpi ? makeMpiBaseline() : nullptr;
#else
  if (o.baselineMpi) {
    // MPI's collective needs MPI's ranks: the MPI build next to this program takes over, with
    // the same arguments and environment (under mpirun, every rank does the same).
    const std::string sibling = mpiSibling();
    if (!sibling.empty()) {
      ::execv(sibling.c_str(), argv);
      return usageError(fmt::format("--baseline mpi: cannot run {}: {}", sibling,
                                    std::strerror(errno)));
    }
    return usageError("--baseline mpi: this weft-perf is built without MPI and no weft-perf-mpi "
                      "(built when CMake finds MPI) is installed next to it");
  }
  const LauncherRank launcher = launcherRank();
#endif
  const char* launcherRank = launcher.rank;
  const bool launched = launcherRank != nullptr;
  if (launched && o.threadsGiven && o.threads != 1)
    return usageError(fmt::format(
        "-t {}: under a launcher ({} is set) every process is one rank; drop -t", o.threads,
        launcher.variable));
  if (!launched && !o.calibratePath.empty())
    return usageError("--calibrate measures between processes: start the ranks with a launcher "
                      "(weftrun -n 2 weft-perf --calibrate FILE)");
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
#ifdef WEFT_PERF_MPI
    comm = mpi.weftComm();
    status = runRank(o, comm, 1, json, baseline.get());
#else
    ensure(early, weftCommInitFromEnv(&comm, nullptr), "weftCommInitFromEnv");
    status = runRank(o, comm, 1, json);
#endif
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
