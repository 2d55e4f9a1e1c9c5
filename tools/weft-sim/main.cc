// weft-sim: predicts every algorithm's time for a collective on a machine this host cannot
// hold, by replaying the schedules the runtime would run (algorithms/cost), and shows what the
// tuner would pick; with --topo, the GPU plan of lib/topology on an hwloc XML host. Exit status: 0, 1 (a simulation failed), 2 (bad usage).
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
      const GpuPlan plan = planGpus(graph, gpusByIndex(graph, options.gpus), options.root);
      std::fputs((options.json ? gpuPlanJson(graph, plan) + "\n" : formatGpuPlan(graph, plan))
                     .c_str(),
                 stdout);
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
