// Every launcher weftCommInitFromEnv understands, simulated as a map of variables: which one is
// recognised, what rank, size and rendezvous it yields, and what a mistake says.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "lib/base/error.hpp"
#include "lib/base/launch_env.hpp"

using namespace weft;
using Vars = std::map<std::string, std::string>;

namespace {

LaunchEnv parse(const Vars& vars) {
  return parseLaunchEnv([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

// The error a bad environment gives: its result and message.
Error parseError(const Vars& vars) {
  try {
    parse(vars);
  } catch (const Error& e) {
    return e;
  }
  FAIL("no error");
  return Error(weftSuccess, "");
}

const std::string kHexId(256, 'a');

Vars mpirun(int rank, int size) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(size)},
          {"PMIX_RANK", std::to_string(rank)},
          {"PMIX_NAMESPACE", "1234567"}};
}

Vars srun(int rank, int size) {
  return {{"SLURM_PROCID", std::to_string(rank)},  {"SLURM_NTASKS", std::to_string(size)},
          {"SLURM_STEP_NUM_TASKS", std::to_string(size)},
          {"SLURM_LOCALID", std::to_string(rank % 2)}, {"SLURM_NODEID", std::to_string(rank / 2)},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},   {"SLURM_STEP_ID", "0"},
          {"PMIX_RANK", std::to_string(rank)},      {"PMIX_NAMESPACE", "slurm.pmix.77.0"}};
}

Vars torchrun(int rank, int size) {
  return {{"RANK", std::to_string(rank)},          {"WORLD_SIZE", std::to_string(size)},
          {"LOCAL_RANK", std::to_string(rank)},    {"LOCAL_WORLD_SIZE", std::to_string(size)},
          {"MASTER_ADDR", "node0.example"},        {"MASTER_PORT", "29500"}};
}

Vars with(Vars base, const Vars& more) {
  for (const auto& [k, v] : more) base[k] = v;
  return base;
}

Vars without(Vars base, std::initializer_list<const char*> names) {
  for (const char* n : names) base.erase(n);
  return base;
}

}  // namespace

TEST_CASE("weftrun's variables give the id in the environment") {
  const LaunchEnv e = parse({{"WEFT_UNIQUE_ID", kHexId},
                             {"WEFT_RANK", "2"},
                             {"WEFT_NRANKS", "4"},
                             {"WEFT_LOCAL_RANK", "2"},
                             {"WEFT_LOCAL_SIZE", "4"}});
  CHECK(e.launcher == Launcher::kWeftrun);
  CHECK(e.rendezvous == Rendezvous::kUniqueId);
  CHECK(e.uniqueIdHex == kHexId);
  CHECK(e.rank == 2);
  CHECK(e.nranks == 4);
  CHECK(e.localRank == 2);
  CHECK(e.localSize == 4);
  CHECK(e.warnings.empty());
}

TEST_CASE("Open MPI's mpirun: ranks from OMPI_COMM_WORLD_*, the id through PMIx") {
  const LaunchEnv e = parse(mpirun(3, 4));
  CHECK(e.launcher == Launcher::kOpenMpi);
  CHECK(e.rendezvous == Rendezvous::kPmix);
  CHECK(e.rank == 3);
  CHECK(e.nranks == 4);
  CHECK(e.localRank == 3);
  CHECK(e.localSize == 4);
  CHECK_THAT(e.evidence, Catch::Contains("OMPI_COMM_WORLD_RANK=3"));
}

TEST_CASE("srun: ranks from SLURM_*, local size from the task list, the id through PMIx") {
  const LaunchEnv e = parse(srun(3, 4));
  CHECK(e.launcher == Launcher::kSlurm);
  CHECK(e.rendezvous == Rendezvous::kPmix);
  CHECK(e.rank == 3);
  CHECK(e.nranks == 4);
  CHECK(e.localRank == 1);
  CHECK(e.localSize == 2);
  CHECK(e.warnings.empty());
  // SLURM_NTASKS stands in when the step's own count is missing.
  CHECK(parse(without(srun(1, 4), {"SLURM_STEP_NUM_TASKS"})).nranks == 4);
}

TEST_CASE("srun without PMIx uses weft's store when MASTER_ADDR/MASTER_PORT say where") {
  const Vars vars = with(without(srun(1, 4), {"PMIX_RANK", "PMIX_NAMESPACE"}),
                         {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "4000"},
                          {"WEFT_SECRET", "s3cret"}});
  const LaunchEnv e = parse(vars);
  CHECK(e.launcher == Launcher::kSlurm);
  CHECK(e.rendezvous == Rendezvous::kStore);
  CHECK(e.storeHost == "10.0.0.1");
  CHECK(e.storePort == 4000);
  CHECK(e.secret == std::optional<std::string>("s3cret"));
  CHECK(e.warnings.empty());
}

TEST_CASE("srun without PMIx and without a store address is an error that says both ways out") {
  const Error e = parseError(without(srun(1, 4), {"PMIX_RANK", "PMIX_NAMESPACE"}));
  CHECK(e.result() == weftInvalidUsage);
  CHECK_THAT(e.what(), Catch::Contains("--mpi=pmix") && Catch::Contains("MASTER_ADDR") &&
                           Catch::Contains("found: SLURM_PROCID=1"));
}

TEST_CASE("a batch script's SLURM_PROCID without SLURM_STEP_ID is warned about") {
  const LaunchEnv e = parse(without(srun(0, 4), {"SLURM_STEP_ID"}));
  REQUIRE(e.warnings.size() == 1);
  CHECK_THAT(e.warnings[0], Catch::Contains("SLURM_STEP_ID"));
}

TEST_CASE("a PMIx launcher alone: rank from PMIX_RANK, size left to the PMIx server") {
  const LaunchEnv e = parse({{"PMIX_RANK", "5"}, {"PMIX_NAMESPACE", "prte-1"}});
  CHECK(e.launcher == Launcher::kPmix);
  CHECK(e.rendezvous == Rendezvous::kPmix);
  CHECK(e.rank == 5);
  CHECK_FALSE(e.nranks.has_value());
}

TEST_CASE("torchrun-style variables: weft's store at MASTER_ADDR:MASTER_PORT") {
  LaunchEnv e = parse(with(torchrun(1, 4), {{"WEFT_SECRET", "x"}}));
  CHECK(e.launcher == Launcher::kTorchrun);
  CHECK(e.rendezvous == Rendezvous::kStore);
  CHECK(e.rank == 1);
  CHECK(e.nranks == 4);
  CHECK(e.storeHost == "node0.example");
  CHECK(e.storePort == 29500);
  CHECK(e.warnings.empty());
  // WEFT_STORE_PORT wins; torchrun's own agent store holds MASTER_PORT: the next port.
  CHECK(parse(with(torchrun(0, 2), {{"WEFT_STORE_PORT", "4444"}})).storePort == 4444);
  CHECK(parse(with(torchrun(0, 2), {{"TORCHELASTIC_USE_AGENT_STORE", "True"}})).storePort ==
        29501);
  CHECK(parse(with(torchrun(0, 2), {{"TORCHELASTIC_USE_AGENT_STORE", "False"}})).storePort ==
        29500);
}

TEST_CASE("a store without WEFT_SECRET or WEFT_SECRET_FILE works but warns") {
  const LaunchEnv e = parse(torchrun(0, 2));
  REQUIRE(e.warnings.size() == 1);
  CHECK_THAT(e.warnings[0], Catch::Contains("WEFT_SECRET") && Catch::Contains("node0.example"));
  const LaunchEnv f = parse(with(torchrun(0, 2), {{"WEFT_SECRET_FILE", "/run/secret"}}));
  CHECK(f.warnings.empty());
  CHECK(f.secretFile == std::optional<std::string>("/run/secret"));
  CHECK(parseError(with(torchrun(0, 2), {{"WEFT_SECRET", "a"}, {"WEFT_SECRET_FILE", "b"}}))
            .result() == weftInvalidUsage);
}

TEST_CASE("launchers are recognised in order: weftrun, torchrun worker, Open MPI, Slurm, PMIx, "
          "torchrun-style") {
  const Vars weftrunVars = {{"WEFT_UNIQUE_ID", kHexId}, {"WEFT_RANK", "0"}, {"WEFT_NRANKS", "1"}};
  CHECK(parse(with(with(mpirun(0, 2), srun(1, 2)), weftrunVars)).launcher == Launcher::kWeftrun);
  // mpirun inside an sbatch allocation: Open MPI's variables describe this process.
  CHECK(parse(with(srun(1, 2), mpirun(0, 2))).launcher == Launcher::kOpenMpi);
  // Plain RANK/WORLD_SIZE under srun are somebody else's: Slurm wins...
  CHECK(parse(with(srun(1, 2), torchrun(0, 4))).launcher == Launcher::kSlurm);
  // ... but a torchrun worker (TORCHELASTIC_RUN_ID) started by srun is torchrun's.
  const LaunchEnv worker =
      parse(with(with(srun(1, 2), torchrun(3, 4)), {{"TORCHELASTIC_RUN_ID", "job7"}}));
  CHECK(worker.launcher == Launcher::kTorchrun);
  CHECK(worker.rank == 3);
  // WEFT_LAUNCHER overrides detection.
  const LaunchEnv forced = parse(with(with(srun(1, 2), torchrun(3, 4)), {{"WEFT_LAUNCHER",
                                                                          "torchrun"}}));
  CHECK(forced.launcher == Launcher::kTorchrun);
  CHECK(parse(with(mpirun(1, 2), {{"WEFT_LAUNCHER", "pmix"}})).launcher == Launcher::kPmix);
  CHECK(parseError({{"WEFT_LAUNCHER", "lsf"}}).result() == weftInvalidArgument);
}

TEST_CASE("no launcher at all lists what each launcher needs") {
  const Error e = parseError({{"HOME", "/root"}});
  CHECK(e.result() == weftInvalidUsage);
  CHECK_THAT(e.what(), Catch::Contains("WEFT_UNIQUE_ID") && Catch::Contains("OMPI_COMM_WORLD_RANK") &&
                           Catch::Contains("SLURM_PROCID") && Catch::Contains("PMIX_RANK") &&
                           Catch::Contains("MASTER_PORT") && Catch::Contains("found: none of them"));
}

TEST_CASE("missing variables are named, and everything found is listed") {
  struct Row {
    Vars vars;
    std::string says;
  };
  const std::vector<Row> rows = {
      {{{"WEFT_RANK", "1"}}, "found: WEFT_RANK=1"},
      {{{"WEFT_UNIQUE_ID", kHexId}, {"WEFT_RANK", "1"}}, "found: WEFT_UNIQUE_ID, WEFT_RANK=1"},
      {without(mpirun(0, 2), {"OMPI_COMM_WORLD_SIZE"}), "OMPI_COMM_WORLD_SIZE (set by mpirun)"},
      {without(srun(0, 2), {"SLURM_NTASKS", "SLURM_STEP_NUM_TASKS"}), "SLURM_NTASKS"},
      {without(torchrun(0, 2), {"MASTER_PORT"}), "missing: MASTER_PORT"},
      {without(torchrun(0, 2), {"MASTER_ADDR", "WORLD_SIZE"}), "missing: WORLD_SIZE, MASTER_ADDR"},
      {{{"PMIX_RANK", "0"}}, "PMIX_NAMESPACE"},
  };
  for (const Row& row : rows) {
    INFO(row.says);
    const Error e = parseError(row.vars);
    CHECK(e.result() == weftInvalidUsage);
    CHECK_THAT(e.what(), Catch::Contains(row.says));
  }
}

TEST_CASE("contradictory variables are errors naming both sides") {
  struct Row {
    Vars vars;
    std::string says;
  };
  const std::vector<Row> rows = {
      {with(mpirun(0, 2), {{"OMPI_COMM_WORLD_RANK", "2"}}),
       "OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2"},
      {with(mpirun(1, 2), {{"PMIX_RANK", "0"}}), "OMPI_COMM_WORLD_RANK=1 but PMIX_RANK=0"},
      {with(mpirun(1, 4), {{"OMPI_COMM_WORLD_LOCAL_RANK", "4"}}),
       "OMPI_COMM_WORLD_LOCAL_RANK=4 is not below OMPI_COMM_WORLD_LOCAL_SIZE=4"},
      {with(srun(1, 4), {{"PMIX_RANK", "3"}}), "SLURM_PROCID=1 but PMIX_RANK=3"},
      {with(srun(3, 4), {{"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}}),
       "SLURM_LOCALID=1 is not below SLURM_STEP_TASKS_PER_NODE=1"},
      {with(torchrun(5, 4), {}), "RANK=5 is not below WORLD_SIZE=4"},
      {with(torchrun(0, 4), {{"LOCAL_WORLD_SIZE", "8"}}), "LOCAL_WORLD_SIZE=8 is more than"},
      {{{"WEFT_UNIQUE_ID", kHexId}, {"WEFT_RANK", "3"}, {"WEFT_NRANKS", "3"}},
       "WEFT_RANK=3 is not below WEFT_NRANKS=3"},
  };
  for (const Row& row : rows) {
    INFO(row.says);
    const Error e = parseError(row.vars);
    CHECK(e.result() == weftInvalidUsage);
    CHECK_THAT(e.what(), Catch::Contains(row.says) && Catch::Contains("found: "));
  }
}

TEST_CASE("malformed values are weftInvalidArgument naming the variable") {
  for (const auto& [vars, name] : std::vector<std::pair<Vars, std::string>>{
           {with(mpirun(0, 2), {{"OMPI_COMM_WORLD_SIZE", "two"}}), "OMPI_COMM_WORLD_SIZE"},
           {with(srun(0, 2), {{"SLURM_PROCID", "-1"}}), "SLURM_PROCID"},
           {with(srun(0, 2), {{"SLURM_STEP_TASKS_PER_NODE", "2(x"}}), "SLURM_STEP_TASKS_PER_NODE"},
           {with(torchrun(0, 2), {{"MASTER_PORT", "70000"}}), "MASTER_PORT"},
           {with(torchrun(0, 2), {{"WORLD_SIZE", "0"}}), "WORLD_SIZE"},
           {{{"WEFT_RANK", "one"}}, "WEFT_RANK"}}) {
    INFO(name);
    const Error e = parseError(vars);
    CHECK(e.result() == weftInvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains(name));
  }
}

TEST_CASE("Slurm's compressed task counts expand") {
  using Counts = std::vector<int>;
  CHECK(expandSlurmTaskCounts("4").value_or(Counts{}) == Counts{4});
  CHECK(expandSlurmTaskCounts("2(x3),1").value_or(Counts{}) == Counts{2, 2, 2, 1});
  CHECK(expandSlurmTaskCounts("1,3(x2)").value_or(Counts{}) == Counts{1, 3, 3});
  for (const char* bad : {"", "x", "2(x)", "2(x0)", "2(3)", "2,,1", "-1", "2(x3"})
    CHECK_FALSE(expandSlurmTaskCounts(bad).has_value());
}
