#include "lib/base/launch_env.hpp"

#include <array>
#include <charconv>

#include "lib/base/error.hpp"

namespace weft {
namespace {

constexpr std::array kLaunchVariables = {
    EnvVar{"WEFT_UNIQUE_ID", "(set by weftrun)",
           "the job's unique id, hex: weftCommInitFromEnv joins the communicator it names"},
    EnvVar{"WEFT_RANK", "(set by weftrun)", "this process's rank, for weftCommInitFromEnv"},
    EnvVar{"WEFT_NRANKS", "(set by weftrun)", "the number of ranks, for weftCommInitFromEnv"},
    EnvVar{"WEFT_LOCAL_RANK", "(set by weftrun)", "this process's rank among those on its host"},
    EnvVar{"WEFT_LOCAL_SIZE", "(set by weftrun)", "the number of ranks on this host"},
    EnvVar{"WEFT_LAUNCHER", "auto",
           "whose variables weftCommInitFromEnv reads: auto (the first found: weftrun, torchrun "
           "worker, Open MPI, Slurm, PMIx, torchrun-style), weftrun, torchrun, ompi, slurm, pmix"},
    EnvVar{"WEFT_SECRET", "(none)",
           "shared secret of weft's rendezvous store (torchrun-style launches); the same on "
           "every rank"},
    EnvVar{"WEFT_SECRET_FILE", "(none)",
           "a file holding that secret instead (keep it mode 0600)"},
    EnvVar{"WEFT_STORE_PORT", "(MASTER_PORT)",
           "port of weft's rendezvous store; default MASTER_PORT, or MASTER_PORT+1 when "
           "torchrun's own store holds MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True)"},
    EnvVar{"OMPI_COMM_WORLD_RANK", "(set by mpirun)", "Open MPI: this process's rank"},
    EnvVar{"OMPI_COMM_WORLD_SIZE", "(set by mpirun)", "Open MPI: the number of ranks"},
    EnvVar{"OMPI_COMM_WORLD_LOCAL_RANK", "(set by mpirun)", "Open MPI: the rank on this host"},
    EnvVar{"OMPI_COMM_WORLD_LOCAL_SIZE", "(set by mpirun)", "Open MPI: the ranks on this host"},
    EnvVar{"PMIX_RANK", "(set by PMIx launchers)",
           "PMIx: this process's rank; with PMIX_NAMESPACE, the unique id travels through PMIx"},
    EnvVar{"PMIX_NAMESPACE", "(set by PMIx launchers)", "PMIx: the job's namespace"},
    EnvVar{"SLURM_PROCID", "(set by srun)", "Slurm: this task's rank"},
    EnvVar{"SLURM_STEP_NUM_TASKS", "(set by srun)", "Slurm: the tasks of the step (the size)"},
    EnvVar{"SLURM_NTASKS", "(set by srun)", "Slurm: the size, when SLURM_STEP_NUM_TASKS is unset"},
    EnvVar{"SLURM_LOCALID", "(set by srun)", "Slurm: the task's rank on its node"},
    EnvVar{"SLURM_NODEID", "(set by srun)", "Slurm: the node's index, for the local size"},
    EnvVar{"SLURM_STEP_TASKS_PER_NODE", "(set by srun)",
           "Slurm: tasks per node (\"2(x3),1\"), for the local size"},
    EnvVar{"SLURM_STEP_ID", "(set by srun)",
           "Slurm: present inside an srun step (absent: a batch script, warned about)"},
    EnvVar{"RANK", "(set by torchrun)", "torchrun-style: this process's rank"},
    EnvVar{"WORLD_SIZE", "(set by torchrun)", "torchrun-style: the number of ranks"},
    EnvVar{"LOCAL_RANK", "(set by torchrun)", "torchrun-style: the rank on this host"},
    EnvVar{"LOCAL_WORLD_SIZE", "(set by torchrun)", "torchrun-style: the ranks on this host"},
    EnvVar{"MASTER_ADDR", "(set by torchrun)",
           "torchrun-style: host of rank 0, where weft's rendezvous store listens"},
    EnvVar{"MASTER_PORT", "(set by torchrun)", "torchrun-style: port of that store"},
    EnvVar{"TORCHELASTIC_RUN_ID", "(set by torchrun)",
           "marks a torchrun worker: its RANK/WORLD_SIZE win over an enclosing srun or mpirun"},
    EnvVar{"TORCHELASTIC_USE_AGENT_STORE", "(set by torchrun)",
           "True: torchrun's own store listens on MASTER_PORT (see WEFT_STORE_PORT)"},
};

// Every variable that says something about the launch, in the order messages list them.
constexpr std::array kEvidenceNames = {
    "WEFT_LAUNCHER",        "WEFT_UNIQUE_ID",
    "WEFT_RANK",            "WEFT_NRANKS",
    "WEFT_LOCAL_RANK",      "WEFT_LOCAL_SIZE",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMIX_RANK",            "PMIX_NAMESPACE",
    "SLURM_PROCID",         "SLURM_STEP_NUM_TASKS",
    "SLURM_NTASKS",         "SLURM_LOCALID",
    "SLURM_NODEID",         "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_STEP_ID",        "TORCHELASTIC_RUN_ID",
    "RANK",                 "WORLD_SIZE",
    "LOCAL_RANK",           "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",          "MASTER_PORT",
    "WEFT_STORE_PORT",
};

constexpr int64_t kMaxRank = (int64_t{1} << 31) - 1;

using Getter = std::function<const char*(const char*)>;

class Reader {
 public:
  explicit Reader(const Getter& get) : get_(get) {}

  const char* raw(const char* name) const {
    const char* v = get_(name);
    return (v != nullptr && *v != 0) ? v : nullptr;
  }
  bool has(const char* name) const { return raw(name) != nullptr; }
  std::optional<int> integer(const char* name, int64_t min, int64_t max = kMaxRank) const {
    const char* v = raw(name);
    if (v == nullptr) return std::nullopt;
    return static_cast<int>(parseInteger(name, v, min, max));
  }
  std::optional<std::string> text(const char* name) const {
    const char* v = raw(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  }

  // "A=1, B=2" over every launch variable present ("none of them" when there are none). The
  // unique id is long and secret-bearing: only its presence is shown.
  std::string evidence() const {
    std::string out;
    for (const char* name : kEvidenceNames) {
      const char* v = raw(name);
      if (v == nullptr) continue;
      if (!out.empty()) out += ", ";
      out += std::string_view(name) == "WEFT_UNIQUE_ID" ? std::string(name)
                                                         : fmt::format("{}={}", name, v);
    }
    return out.empty() ? std::string("none of them") : out;
  }

 private:
  const Getter& get_;
};

[[noreturn]] void failIncomplete(const Reader& env, std::string_view what) {
  fail(weftInvalidUsage, "{}; found: {}", what, env.evidence());
}

void checkLocal(const Reader& env, LaunchEnv& out, const char* rankName, const char* sizeName) {
  if (out.localRank && out.localSize && *out.localRank >= *out.localSize)
    failIncomplete(env, fmt::format("{}={} is not below {}={}", rankName, *out.localRank,
                                    sizeName, *out.localSize));
  if (out.localSize && out.nranks && *out.localSize > *out.nranks)
    failIncomplete(env, fmt::format("{}={} is more than the {} ranks of the job", sizeName,
                                    *out.localSize, *out.nranks));
}

void checkRank(const Reader& env, const LaunchEnv& out, const char* rankName,
               const char* sizeName) {
  if (out.nranks && out.rank >= *out.nranks)
    failIncomplete(env, fmt::format("{}={} is not below {}={}", rankName, out.rank, sizeName,
                                    *out.nranks));
}

bool pmixPresent(const Reader& env) {
  return env.has("PMIX_RANK") && env.has("PMIX_NAMESPACE");
}

// PMIx's rank must be the launcher's: a mismatch means variables from two launches.
void checkPmixRank(const Reader& env, const LaunchEnv& out, const char* rankName) {
  const std::optional<int> pmixRank = env.integer("PMIX_RANK", 0);
  if (pmixRank && *pmixRank != out.rank)
    failIncomplete(env, fmt::format("{}={} but PMIX_RANK={}: the variables come from different "
                                    "launches",
                                    rankName, out.rank, *pmixRank));
}

// torchrun-style store address: MASTER_ADDR and MASTER_PORT (WEFT_STORE_PORT overrides).
bool readStore(const Reader& env, LaunchEnv& out) {
  const std::optional<std::string> addr = env.text("MASTER_ADDR");
  const std::optional<int> masterPort = env.integer("MASTER_PORT", 1, 65535);
  if (!addr || !masterPort) return false;
  out.rendezvous = Rendezvous::kStore;
  out.storeHost = *addr;
  if (const std::optional<int> port = env.integer("WEFT_STORE_PORT", 1, 65535)) {
    out.storePort = static_cast<uint16_t>(*port);
  } else if (env.text("TORCHELASTIC_USE_AGENT_STORE") == std::optional<std::string>("True")) {
    if (*masterPort == 65535)
      failIncomplete(env, "torchrun's store holds MASTER_PORT=65535 and weft's store cannot use "
                          "the next port; set WEFT_STORE_PORT");
    out.storePort = static_cast<uint16_t>(*masterPort + 1);
  } else {
    out.storePort = static_cast<uint16_t>(*masterPort);
  }
  return true;
}

void readWeftrun(const Reader& env, LaunchEnv& out) {
  const std::optional<std::string> id = env.text("WEFT_UNIQUE_ID");
  const std::optional<int> rank = env.integer("WEFT_RANK", 0);
  const std::optional<int> nranks = env.integer("WEFT_NRANKS", 1);
  if (!id || !rank || !nranks)
    failIncomplete(env,
                   "weftrun's variables are incomplete: weftCommInitFromEnv needs WEFT_UNIQUE_ID, "
                   "WEFT_RANK and WEFT_NRANKS (set by weftrun)");
  out.rank = *rank;
  out.nranks = *nranks;
  out.localRank = env.integer("WEFT_LOCAL_RANK", 0);
  out.localSize = env.integer("WEFT_LOCAL_SIZE", 1);
  checkRank(env, out, "WEFT_RANK", "WEFT_NRANKS");
  checkLocal(env, out, "WEFT_LOCAL_RANK", "WEFT_LOCAL_SIZE");
  out.rendezvous = Rendezvous::kUniqueId;
  out.uniqueIdHex = *id;
}

void readTorchrun(const Reader& env, LaunchEnv& out) {
  const std::optional<int> rank = env.integer("RANK", 0);
  const std::optional<int> size = env.integer("WORLD_SIZE", 1);
  std::vector<std::string> missing;
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    if (!env.has(name)) missing.push_back(name);
  if (!missing.empty())
    failIncomplete(env, fmt::format("torchrun-style variables are incomplete: "
                                    "weftCommInitFromEnv needs RANK, WORLD_SIZE, MASTER_ADDR and "
                                    "MASTER_PORT; missing: {}",
                                    fmt::join(missing, ", ")));
  out.rank = *rank;
  out.nranks = *size;
  out.localRank = env.integer("LOCAL_RANK", 0);
  out.localSize = env.integer("LOCAL_WORLD_SIZE", 1);
  checkRank(env, out, "RANK", "WORLD_SIZE");
  checkLocal(env, out, "LOCAL_RANK", "LOCAL_WORLD_SIZE");
  readStore(env, out);
}

// Open MPI and Slurm share a launcher's PMIx server when there is one, else fall back to the
// store when MASTER_ADDR/MASTER_PORT say where.
void chooseLauncherRendezvous(const Reader& env, LaunchEnv& out, const char* rankName,
                              std::string_view how) {
  if (pmixPresent(env)) {
    checkPmixRank(env, out, rankName);
    out.rendezvous = Rendezvous::kPmix;
    return;
  }
  if (readStore(env, out)) return;
  failIncomplete(env,
                 fmt::format("{} launched this process without a PMIx server (PMIX_RANK and "
                             "PMIX_NAMESPACE are not set), so the unique id has no way to travel: "
                             "{}, or set MASTER_ADDR and MASTER_PORT for weft's own store",
                             launcherName(out.launcher), how));
}

void readOpenMpi(const Reader& env, LaunchEnv& out) {
  const std::optional<int> rank = env.integer("OMPI_COMM_WORLD_RANK", 0);
  const std::optional<int> size = env.integer("OMPI_COMM_WORLD_SIZE", 1);
  if (!rank || !size)
    failIncomplete(env, "Open MPI's variables are incomplete: weftCommInitFromEnv needs "
                        "OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE (set by mpirun)");
  out.rank = *rank;
  out.nranks = *size;
  out.localRank = env.integer("OMPI_COMM_WORLD_LOCAL_RANK", 0);
  out.localSize = env.integer("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  checkRank(env, out, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  checkLocal(env, out, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  chooseLauncherRendezvous(env, out, "OMPI_COMM_WORLD_RANK",
                           "use an Open MPI built with PMIx (any 4.x or later)");
}

void readSlurm(const Reader& env, LaunchEnv& out) {
  const std::optional<int> rank = env.integer("SLURM_PROCID", 0);
  std::optional<int> size = env.integer("SLURM_STEP_NUM_TASKS", 1);
  const char* sizeName = "SLURM_STEP_NUM_TASKS";
  if (!size) {
    size = env.integer("SLURM_NTASKS", 1);
    sizeName = "SLURM_NTASKS";
  }
  if (!rank || !size)
    failIncomplete(env, "Slurm's variables are incomplete: weftCommInitFromEnv needs "
                        "SLURM_PROCID and SLURM_STEP_NUM_TASKS or SLURM_NTASKS (set by srun)");
  out.rank = *rank;
  out.nranks = *size;
  out.localRank = env.integer("SLURM_LOCALID", 0);
  const std::optional<int> node = env.integer("SLURM_NODEID", 0);
  if (const std::optional<std::string> perNode = env.text("SLURM_STEP_TASKS_PER_NODE")) {
    const std::optional<std::vector<int>> counts = expandSlurmTaskCounts(*perNode);
    if (!counts)
      fail(weftInvalidArgument,
           "SLURM_STEP_TASKS_PER_NODE='{}' is not a Slurm task count list (like \"2(x3),1\")",
           *perNode);
    if (node && *node < static_cast<int>(counts->size()))
      out.localSize = (*counts)[static_cast<size_t>(*node)];
  }
  checkRank(env, out, "SLURM_PROCID", sizeName);
  checkLocal(env, out, "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE");
  if (!env.has("SLURM_STEP_ID"))
    out.warnings.push_back(
        "SLURM_PROCID is set but SLURM_STEP_ID is not: this looks like a batch script rather "
        "than a task of srun; every rank must be started by srun");
  chooseLauncherRendezvous(env, out, "SLURM_PROCID", "run with srun --mpi=pmix");
}

void readPmix(const Reader& env, LaunchEnv& out) {
  const std::optional<int> rank = env.integer("PMIX_RANK", 0);
  if (!rank || !env.has("PMIX_NAMESPACE"))
    failIncomplete(env, "PMIx's variables are incomplete: weftCommInitFromEnv needs PMIX_RANK and "
                        "PMIX_NAMESPACE (set by a PMIx launcher)");
  out.rank = *rank;
  out.nranks.reset();  // the job size comes from the PMIx server
  out.rendezvous = Rendezvous::kPmix;
}

std::optional<Launcher> launcherFromName(std::string_view name) {
  if (name == "auto") return std::nullopt;
  if (name == "weftrun") return Launcher::kWeftrun;
  if (name == "torchrun") return Launcher::kTorchrun;
  if (name == "ompi" || name == "openmpi" || name == "mpirun") return Launcher::kOpenMpi;
  if (name == "slurm" || name == "srun") return Launcher::kSlurm;
  if (name == "pmix") return Launcher::kPmix;
  fail(weftInvalidArgument,
       "WEFT_LAUNCHER='{}': expected auto, weftrun, torchrun, ompi, slurm or pmix", name);
}

std::optional<Launcher> detect(const Reader& env) {
  if (env.has("WEFT_UNIQUE_ID") || env.has("WEFT_RANK") || env.has("WEFT_NRANKS"))
    return Launcher::kWeftrun;
  if (env.has("TORCHELASTIC_RUN_ID") && env.has("RANK")) return Launcher::kTorchrun;
  if (env.has("OMPI_COMM_WORLD_RANK") || env.has("OMPI_COMM_WORLD_SIZE"))
    return Launcher::kOpenMpi;
  if (env.has("SLURM_PROCID")) return Launcher::kSlurm;
  if (env.has("PMIX_RANK")) return Launcher::kPmix;
  if (env.has("RANK") || env.has("WORLD_SIZE")) return Launcher::kTorchrun;
  return std::nullopt;
}

}  // namespace

const char* launcherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kWeftrun: return "weftrun";
    case Launcher::kTorchrun: return "torchrun";
    case Launcher::kOpenMpi: return "Open MPI";
    case Launcher::kSlurm: return "Slurm";
    case Launcher::kPmix: return "PMIx";
  }
  return "?";
}

const char* rendezvousName(Rendezvous rendezvous) {
  switch (rendezvous) {
    case Rendezvous::kUniqueId: return "the unique id in WEFT_UNIQUE_ID";
    case Rendezvous::kPmix: return "PMIx";
    case Rendezvous::kStore: return "weft's store";
  }
  return "?";
}

std::span<const EnvVar> launchVariables() { return kLaunchVariables; }

std::optional<std::vector<int>> expandSlurmTaskCounts(std::string_view text) {
  std::vector<int> counts;
  auto number = [](std::string_view s, int& value) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    return ec == std::errc() && end == s.data() + s.size() && value >= 0;
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    int count = 0, repeat = 1;
    const size_t paren = item.find("(x");
    if (paren == std::string_view::npos) {
      if (!number(item, count)) return std::nullopt;
    } else {
      if (item.back() != ')' || !number(item.substr(0, paren), count) ||
          !number(item.substr(paren + 2, item.size() - paren - 3), repeat) || repeat < 1 ||
          repeat > (1 << 20))
        return std::nullopt;
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
    start = comma + 1;
  }
  return counts;
}

LaunchEnv parseLaunchEnv(const Getter& get) {
  const Reader env(get);
  std::optional<Launcher> launcher;
  if (const std::optional<std::string> forced = env.text("WEFT_LAUNCHER"))
    launcher = launcherFromName(*forced);
  if (!launcher) launcher = detect(env);
  if (!launcher)
    failIncomplete(env,
                   "no launcher environment: weftCommInitFromEnv reads weftrun's WEFT_UNIQUE_ID, "
                   "WEFT_RANK and WEFT_NRANKS; Open MPI's OMPI_COMM_WORLD_RANK and "
                   "OMPI_COMM_WORLD_SIZE; Slurm's SLURM_PROCID and SLURM_NTASKS; PMIx's PMIX_RANK "
                   "and PMIX_NAMESPACE; or torchrun's RANK, WORLD_SIZE, MASTER_ADDR and "
                   "MASTER_PORT");
  LaunchEnv out;
  out.launcher = *launcher;
  switch (*launcher) {
    case Launcher::kWeftrun: readWeftrun(env, out); break;
    case Launcher::kTorchrun: readTorchrun(env, out); break;
    case Launcher::kOpenMpi: readOpenMpi(env, out); break;
    case Launcher::kSlurm: readSlurm(env, out); break;
    case Launcher::kPmix: readPmix(env, out); break;
  }
  out.secret = env.text("WEFT_SECRET");
  out.secretFile = env.text("WEFT_SECRET_FILE");
  if (out.secret && out.secretFile)
    fail(weftInvalidUsage,
         "WEFT_SECRET and WEFT_SECRET_FILE are both set: set one (every rank the same)");
  if (out.rendezvous == Rendezvous::kStore && !out.secret && !out.secretFile)
    out.warnings.push_back(fmt::format(
        "neither WEFT_SECRET nor WEFT_SECRET_FILE is set: weft's rendezvous store at {}:{} "
        "authenticates ranks with a key derived from MASTER_ADDR, MASTER_PORT and the job size, "
        "which anyone can compute, so whoever reaches that port can read the job's unique id "
        "and join it; set WEFT_SECRET (the same on every rank) or WEFT_SECRET_FILE",
        out.storeHost, out.storePort));
  out.evidence = env.evidence();
  return out;
}

}  // namespace weft
