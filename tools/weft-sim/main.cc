// weft-sim: predicts every algorithm's time for a collective on a machine this host cannot
// hold, by replaying the schedules the runtime would run (algorithms/cost), and shows what the
// tuner would pick; with --topo, the GPU plan of lib/topology on an hwloc XML host. Exit status: 0, 1 (a simulation failed), 2 (bad usage).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "lib/topology/discover.hpp"
#include "lib/topology/plan.hpp"
#include "report.hpp"
#include "sweep.hpp"

int main(int argc, char** argv) {
  using namespace weft::sim;
  Options options;
  try {
    options = parseOptions(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "weft-sim: %s\n%s", e.what(), usage().c_str());
    return 2;
  }
  if (options.help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  try {
    if (!options.topoFile.empty()) {
      using namespace weft::topology;
      const Graph graph = discover({options.topoFile, ""});
      GpuPlan plan = planGpus(graph, gpusByIndex(graph, options.gpus), options.root);
      if (options.json) {
        std::fputs((gpuPlanJson(graph, plan) + "\n").c_str(), stdout);
        return 0;
      }
      // The schedules themselves, replayed message by message at the sweep's largest size; the
      // plan chooses again from the replay (never below the ring replayed the same way).
      const uint64_t bytes = std::max<uint64_t>(options.maxBytes, uint64_t{256} << 20);
      const struct {
        const char* name;
        CollectivePlan* plan;
      } collectives[] = {{"broadcast", &plan.broadcast},
                         {"reduce", &plan.reduce},
                         {"allreduce", &plan.allreduce},
                         {"allgather", &plan.allgather}};
      std::string replayed;
      for (const auto& [name, c] : collectives) {
        const Replayed r = repackByReplay(graph, plan, *c, bytes, uint64_t{1} << 20);
        const double chosen = chooseByReplay(*c, r);
        replayed += fmt::format(
            "  {:<9} packed trees {:8.2f} GB/s ({:5.1f}%)  ring {:8.2f} GB/s ({:5.1f}%)  "
            "chosen {:<5} {:5.1f}% of the bound\n",
            name, r.packedGBps, 100 * r.packedGBps / c->upperBoundGBps, r.ringGBps,
            100 * r.ringGBps / c->upperBoundGBps, c->ringChosen ? "ring" : "trees",
            100 * chosen / c->upperBoundGBps);
      }
      std::fputs(formatGpuPlan(graph, plan).c_str(), stdout);
      std::printf(
          "replayed by the cost model at %llu bytes, 1 MiB chunks (the plan chooses from "
          "these):\n%s",
          static_cast<unsigned long long>(bytes), replayed.c_str());
      return 0;
    }
    const std::vector<SizeResult> results = simulateSweep(options);
    const std::string out =
        options.json ? formatJson(options, results) : formatTable(options, results);
    std::fputs(out.c_str(), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-sim: %s\n", e.what());
    return 1;
  }
  return 0;
}
