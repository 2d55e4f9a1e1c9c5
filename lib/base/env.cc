#include "lib/base/env.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <mutex>

#include "lib/base/error.hpp"
#include "lib/base/launch_env.hpp"

namespace weft {
namespace {

constexpr std::array kVariables = {
    EnvVar{"WEFT_DEBUG", "WARN", "log level: NONE, VERSION, WARN, INFO or TRACE"},
    EnvVar{"WEFT_DEBUG_SUBSYS", "ALL",
           "comma list of INIT, COLL, TOPO, TUNE, NET, SHM, BOOT, ENV, ALL; a leading ^ excludes"},
    EnvVar{"WEFT_DEBUG_FILE", "(stderr)", "write the log here; %h is the host name, %p the pid"},
    EnvVar{"WEFT_TIMEOUT_MS", "300000",
           "deadline of every wait, in milliseconds (config.timeoutMs overrides per communicator)"},
    EnvVar{
        "WEFT_SOCKET_IFNAME", "(first up, non-loopback)",
        "interface for bootstrap sockets: prefix match, ^ excludes, = exact (eth0, ^docker, =lo)"},
    EnvVar{"WEFT_CHUNK_BYTES", "(tuned)",
           "pipeline chunk size of schedules, in bytes (at least 256)"},
    EnvVar{"WEFT_ALGO", "(tuned)",
           "algorithms the tuner may choose, NCCL_ALGO-style: allreduce:ring,tree;broadcast:chain "
           "(^ excludes; native names the shared-memory collectives; weft-topo --algorithms lists "
           "the names)"},
    EnvVar{"WEFT_TUNE_FILE", "(built-in defaults)",
           "link and reduction parameters for the cost model, as written by weft-perf --calibrate"},
    EnvVar{"WEFT_TOPO_FILE", "(this machine)",
           "describe the host with this hwloc XML file (format 2.0) instead of discovering it"},
    EnvVar{"WEFT_TOPO_SYNTHETIC", "(this machine)",
           "describe the host with this hwloc synthetic string (pack:2 numa:1 core:8 pu:1)"},
    EnvVar{"WEFT_TOPO_DUMP_FILE", "(none)",
           "rank 0 writes the merged system picture it decided from (JSON) to this file"},
    EnvVar{"WEFT_CHECK", "0",
           "1: before each operation the ranks compare what they were asked (collective, count, "
           "datatype, op, root, sequence number) and fail with weftInvalidUsage naming the "
           "disagreeing ranks instead of hanging or corrupting"},
    EnvVar{"WEFT_SHM_DISABLE", "0",
           "1: no shared memory; ranks on one host use the network transport (UCX)"},
    EnvVar{"WEFT_HOST_ID", "(boot id + IPC namespace)",
           "ranks with the same value are on one host (they must be able to share memory); "
           "replaces the identity weft reads from the kernel"},
    EnvVar{"WEFT_NET_CHANNELS", "1",
           "connections (UCX endpoints) per peer on another host, 1..8: message k of a transfer "
           "goes on connection k mod N, for links one tcp connection cannot fill"},
    EnvVar{"WEFT_SHM_MODE", "auto",
           "how shared-memory collectives reach peers' buffers: auto (direct when mapped; else "
           "CMA above 16 KiB per block (from 16 KiB on 2 ranks) for scatter; for allgather, "
           "alltoall, gather and broadcast at those sizes, allreduce on 2 ranks above 16 KiB + "
           "56 B and on 3-4 ranks beyond one-shot, the faster of staging and CMA in trials on "
           "the first calls of each size (WEFT_SHM_TUNE); with WEFT_SHM_TUNE=0 or "
           "WEFT_SHM_CMA_COST given, CMA for these where a CMA copy costs under 2.2 memcpys, up "
           "to 32 MiB of output on the host (allreduce on 3-4 ranks: from 256 KiB up to 16 MiB); "
           "else staged), staged (always through the segment) or cma"},
    EnvVar{"WEFT_SHM_CMA_COST", "(measured)",
           "what a CMA copy costs in memcpys, 0.01 to 1000, the same on every rank of a host: "
           "replaces the measurement WEFT_SHM_MODE=auto goes by (under 2.2: CMA is cheap), and "
           "turns the trials of WEFT_SHM_TUNE off"},
    EnvVar{"WEFT_SHM_TUNE", "1",
           "1: between processes with ordinary buffers (WEFT_SHM_MODE=auto, CMA working, "
           "WEFT_SHM_CMA_COST not given), the first 18 calls of each collective and power-of-two "
           "size run staged, staged with cached stores into the slots, and through CMA, 3 at a "
           "time; every rank times them, and in the next call all keep the path whose slowest "
           "rank's median is lowest, for about 5 s of calls (100 to 2^30) before the trials run "
           "again (logged at INFO); 0: the measured CMA cost decides, and staged calls stream "
           "large pieces into the slots where each rank has a core"},
    EnvVar{"WEFT_SHM_SPREAD", "1",
           "1: before a shared-memory collective, a rank that shares its CPU with more of the "
           "host's ranks than their share of the CPUs moves to the least crowded CPU of its "
           "affinity mask (the mask itself is kept); 0: ranks stay where the kernel puts them"},
    EnvVar{"WEFT_SHM_CORES", "(affinity masks)",
           "how many CPUs the host's ranks have between them, 1 to 1024, instead of the CPUs "
           "in the union of their affinity masks (which do not show CPUs that other work "
           "keeps busy); ranks that outnumber them wait without spinning. Where ranks give "
           "different numbers, the smallest counts"},
    EnvVar{"WEFT_SHM_SLOT_BYTES", "(from the L2 cache)",
           "bytes of each of a rank's two staging slots in the shared-memory segment, 4096 to "
           "64 MiB, the same on every rank of a host; by default a share of the L2 cache, larger "
           "where the ranks outnumber the cores they may run on"},
};

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

}  // namespace

int64_t parseInteger(const char* name, const char* text, int64_t min, int64_t max) {
  std::string_view s(text);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    fail(weftInvalidArgument, "{}='{}' is not an integer", name, text);
  if (value < min || value > max)
    fail(weftInvalidArgument, "{}={} is out of range [{}, {}]", name, value, min, max);
  return value;
}

std::span<const EnvVar> runtimeVariables() { return kVariables; }

std::vector<EnvVar> envVariables() {
  std::vector<EnvVar> all(kVariables.begin(), kVariables.end());
  for (const EnvVar& v : launchVariables()) all.push_back(v);
  return all;
}

std::optional<LogLevel> parseLogLevel(const std::string& text) {
  const std::string u = upper(text);
  if (u == "NONE") return LogLevel::None;
  if (u == "VERSION") return LogLevel::Version;
  if (u == "WARN") return LogLevel::Warn;
  if (u == "INFO") return LogLevel::Info;
  if (u == "TRACE") return LogLevel::Trace;
  return std::nullopt;
}

uint32_t parseSubsystems(const std::string& text) {
  std::string list = upper(text);
  bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list.erase(0, 1);
  uint32_t mask = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string name = list.substr(start, comma - start);
    static constexpr std::pair<const char*, uint32_t> kNames[] = {
        {"INIT", kSubsysInit}, {"COLL", kSubsysColl}, {"TOPO", kSubsysTopo},
        {"TUNE", kSubsysTune}, {"NET", kSubsysNet},   {"SHM", kSubsysShm},
        {"BOOT", kSubsysBoot}, {"ENV", kSubsysEnv},   {"ALL", kSubsysAll}};
    auto it = std::find_if(std::begin(kNames), std::end(kNames),
                           [&](auto& entry) { return name == entry.first; });
    if (it == std::end(kNames))
      fail(weftInvalidArgument,
           "WEFT_DEBUG_SUBSYS='{}': unknown subsystem '{}' (known: INIT, COLL, TOPO, TUNE, NET, "
           "SHM, BOOT, ENV, ALL)",
           text, name);
    mask |= it->second;
    start = comma + 1;
  }
  return exclude ? ~mask : mask;
}

Env parseEnv(const std::function<const char*(const char*)>& get) {
  Env env;
  if (const char* v = get("WEFT_DEBUG"); v && *v) {
    auto level = parseLogLevel(v);
    if (!level)
      fail(weftInvalidArgument, "WEFT_DEBUG='{}': expected NONE, VERSION, WARN, INFO or TRACE", v);
    env.debug = *level;
  }
  if (const char* v = get("WEFT_DEBUG_SUBSYS"); v && *v) env.debugSubsys = parseSubsystems(v);
  if (const char* v = get("WEFT_DEBUG_FILE"); v && *v) env.debugFile = v;
  if (const char* v = get("WEFT_TIMEOUT_MS"); v && *v)
    env.timeoutMs = parseInteger("WEFT_TIMEOUT_MS", v, 1, int64_t{1} << 40);
  if (const char* v = get("WEFT_SOCKET_IFNAME"); v && *v) env.socketIfname = v;
  if (const char* v = get("WEFT_CHUNK_BYTES"); v && *v)
    env.chunkBytes = parseInteger("WEFT_CHUNK_BYTES", v, 256, int64_t{1} << 40);
  if (const char* v = get("WEFT_ALGO"); v && *v) env.algo = v;
  if (const char* v = get("WEFT_TUNE_FILE"); v && *v) env.tuneFile = v;
  if (const char* v = get("WEFT_HOST_ID"); v && *v) env.hostId = v;
  if (const char* v = get("WEFT_TOPO_FILE"); v && *v) env.topoFile = v;
  if (const char* v = get("WEFT_TOPO_SYNTHETIC"); v && *v) env.topoSynthetic = v;
  if (const char* v = get("WEFT_TOPO_DUMP_FILE"); v && *v) env.topoDumpFile = v;
  if (const char* v = get("WEFT_CHECK"); v && *v)
    env.check = parseInteger("WEFT_CHECK", v, 0, 1) == 1;
  if (const char* v = get("WEFT_SHM_DISABLE"); v && *v)
    env.shmDisable = parseInteger("WEFT_SHM_DISABLE", v, 0, 1) == 1;
  if (const char* v = get("WEFT_SHM_SPREAD"); v && *v)
    env.shmSpread = parseInteger("WEFT_SHM_SPREAD", v, 0, 1) == 1;
  if (const char* v = get("WEFT_SHM_TUNE"); v && *v)
    env.shmTune = parseInteger("WEFT_SHM_TUNE", v, 0, 1) == 1;
  if (const char* v = get("WEFT_SHM_CORES"); v && *v)
    env.shmCores = static_cast<int>(parseInteger("WEFT_SHM_CORES", v, 1, 1024));
  if (const char* v = get("WEFT_NET_CHANNELS"); v && *v)
    env.netChannels = static_cast<int>(parseInteger("WEFT_NET_CHANNELS", v, 1, 8));
  if (const char* v = get("WEFT_SHM_SLOT_BYTES"); v && *v)
    env.shmSlotBytes =
        static_cast<uint64_t>(parseInteger("WEFT_SHM_SLOT_BYTES", v, 4096, int64_t{64} << 20));
  if (const char* v = get("WEFT_SHM_CMA_COST"); v && *v) {
    const std::string_view t(v);
    double cost = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), cost);
    if (ec != std::errc() || end != t.data() + t.size())
      fail(weftInvalidArgument, "WEFT_SHM_CMA_COST='{}' is not a number", v);
    if (!(cost >= 0.01 && cost <= 1000))
      fail(weftInvalidArgument, "WEFT_SHM_CMA_COST={} is out of range [0.01, 1000]", v);
    env.shmCmaCost = cost;
  }
  if (const char* v = get("WEFT_SHM_MODE"); v && *v) {
    env.shmMode = v;
    if (env.shmMode != "auto" && env.shmMode != "staged" && env.shmMode != "cma")
      fail(weftInvalidArgument, "WEFT_SHM_MODE='{}': expected auto, staged or cma", v);
  }
  return env;
}

namespace {
struct ParsedEnv {
  Env env;
  std::optional<Error> error;
};
const ParsedEnv& parsedEnv() {
  static const ParsedEnv parsed = [] {
    ParsedEnv p;
    try {
      p.env = parseEnv([](const char* name) { return std::getenv(name); });
    } catch (const Error& e) {
      p.error = e;
    }
    return p;
  }();
  return parsed;
}
}  // namespace

const Env& env() {
  const ParsedEnv& p = parsedEnv();
  if (p.error) throw *p.error;
  return p.env;
}

const Env& envOrDefaults() {
  static const Env defaults;
  const ParsedEnv& p = parsedEnv();
  return p.error ? defaults : p.env;
}

}  // namespace weft
