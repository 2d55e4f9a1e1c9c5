// weft-topo: what weft knows about where it runs. Without a mode, the system picture: the
// discovered graph (this machine, WEFT_TOPO_FILE, or --xml FILE), where each rank sits, the
// ring order and, for GPUs, the packed trees and best ring with their predicted throughput
// against the max-flow upper bound (system.hpp). `--algorithms` lists the algorithm registry;
// `--tuning` prints the tuner's decision per collective and size range for a communicator: the
// job's under weftrun (or any launcher weftCommInitFromEnv reads), else -t N threads of this
// process (weftCommInitAll). Exit status: 0, 1 (a weft call failed), 2 (bad usage).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "include/weft.h"
#include "lib/api/handles.hpp"
#include "lib/comm/comm.hpp"
#include "lib/base/error.hpp"
#include "listing.hpp"
#include "system.hpp"

namespace {

const char* kUsage =
    "usage: weft-topo [--xml FILE | --synthetic DESC] [--gpus I,J,...] [--root R]\n"
    "                 [--ranks N [--map-by core|package]] [--json]\n"
    "       weft-topo --algorithms\n"
    "       weft-topo --tuning [-t THREADS] [-e MAXBYTES_POWER_OF_TWO_EXPONENT]\n"
    "  --algorithms  list the algorithm registry (names for WEFT_ALGO)\n"
    "  --tuning      the tuner's choice per collective and size range for this job's\n"
    "                communicator (under weftrun) or THREADS ranks of this process (default 2);\n"
    "                sizes up to 2^E bytes (default 30)\n"
    "  (no mode)     the system picture: graph with bandwidths, rank places, ring order and\n"
    "                crossings; with GPUs the packed trees, the best ring and the upper bound\n"
    "  --xml FILE    read the host from an hwloc XML file (default: WEFT_TOPO_FILE, else this\n"
    "                machine); --synthetic DESC from an hwloc synthetic description\n"
    "  --gpus LIST   the ranks' GPUs by cudaN index (default: all of the host's)\n"
    "  --root R      broadcast root rank (default 0)\n"
    "  --ranks N     N CPU ranks instead of GPU ranks, placed --map-by core (default) or package\n"
    "  --json        JSON instead of text\n";

int usage(const std::string& why) {
  std::fprintf(stderr, "weft-topo: %s\n%s", why.c_str(), kUsage);
  return 2;
}

bool parseInt(const std::string& text, int lo, int hi, int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= lo && out <= hi;
}

int check(weftResult_t r, const char* what) {
  if (r == weftSuccess) return 0;
  std::fprintf(stderr, "weft-topo: %s: %s: %s\n", what, weftGetErrorString(r),
               weftGetLastError(nullptr));
  return 1;
}

int tuning(int threads, int maxExponent) {
  const bool launched = std::getenv("WEFT_RANK") || std::getenv("OMPI_COMM_WORLD_RANK") ||
                        std::getenv("PMI_RANK") || std::getenv("SLURM_PROCID") ||
                        std::getenv("RANK");
  std::vector<weftComm_t> comms;
  if (launched) {
    comms.resize(1);
    if (int rc = check(weftCommInitFromEnv(&comms[0], nullptr), "weftCommInitFromEnv")) return rc;
  } else {
    comms.resize(threads);
    if (int rc = check(weftCommInitAll(comms.data(), threads, nullptr), "weftCommInitAll"))
      return rc;
  }
  int rank = 0;
  (void)weftCommUserRank(comms[0], &rank);
  int status = 0;
  if (rank == 0) {
    try {
      const std::shared_ptr<weft::Comm> comm = weft::api::readyComm(comms[0]);
      weft::topo::CommShape shape;
      shape.nranks = comm->nranks();
      shape.ranksPerHost = comm->ranksPerHost();
      shape.transport = comm->transport().name();
      shape.native = comm->shm() != nullptr;
      // A tuner of its own: the communicator's keeps only the decisions its calls needed.
      weft::Tuner tuner(shape.nranks, shape.ranksPerHost);
      std::fputs(weft::topo::formatTuning(tuner, shape, uint64_t{1} << maxExponent).c_str(),
                 stdout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-topo: %s\n", e.what());
      status = 1;
    }
  }
  // Destroying finalizes (a barrier with every rank): the thread ranks destroy together.
  std::vector<std::thread> destroyers;
  for (weftComm_t c : comms) destroyers.emplace_back([c] { (void)weftCommDestroy(c); });
  for (std::thread& t : destroyers) t.join();
  return status;
}

bool parseList(const std::string& text, std::vector<int>& out) {
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    int v = 0;
    if (!parseInt(text.substr(begin, end - begin), 0, 1023, v)) return false;
    out.push_back(v);
    begin = end + 1;
  }
  return !out.empty();
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  bool algorithms = false, tune = false;
  int threads = 2, maxExponent = 30;
  weft::topo::SystemOptions system;
  system.source = weft::topology::sourceFromEnv();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--algorithms") {
      algorithms = true;
    } else if (a == "--tuning") {
      tune = true;
    } else if (a == "-t" || a == "-e") {
      if (i + 1 >= args.size()) return usage(a + " needs a value");
      const std::string& v = args[++i];
      if (a == "-t" && !parseInt(v, 1, 256, threads))
        return usage("-t '" + v + "': expected a thread count in [1, 256]");
      if (a == "-e" && !parseInt(v, 0, 40, maxExponent))
        return usage("-e '" + v + "': expected an exponent in [0, 40]");
    } else if (a == "--json") {
      system.json = true;
    } else if (a == "--xml" || a == "--synthetic" || a == "--gpus" || a == "--root" ||
               a == "--ranks" || a == "--map-by") {
      if (i + 1 >= args.size()) return usage(a + " needs a value");
      const std::string& v = args[++i];
      if (a == "--xml") system.source = {v, ""};
      if (a == "--synthetic") system.source = {"", v};
      if (a == "--gpus" && !parseList(v, system.gpus))
        return usage("--gpus '" + v + "': expected cudaN indexes such as 0,1,4");
      if (a == "--root" && !parseInt(v, 0, 1023, system.root))
        return usage("--root '" + v + "': expected a rank");
      if (a == "--ranks" && !parseInt(v, 1, 4096, system.ranks))
        return usage("--ranks '" + v + "': expected a rank count in [1, 4096]");
      if (a == "--map-by") {
        if (v != "core" && v != "package") return usage("--map-by '" + v + "': core or package");
        system.mapBy = v == "core" ? weft::topology::MapBy::Core : weft::topology::MapBy::Package;
      }
    } else {
      return usage("unknown argument '" + a + "'");
    }
  }
  if (algorithms && tune) return usage("give one of --algorithms or --tuning");
  if (!algorithms && !tune) {
    try {
      std::fputs(weft::topo::describeSystem(system).c_str(), stdout);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-topo: %s\n", e.what());
      return 1;
    }
  }
  if (algorithms) {
    std::fputs(weft::topo::formatAlgorithms().c_str(), stdout);
    return 0;
  }
  return tuning(threads, maxExponent);
}
