#include "options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

#include "algorithms/shm/path_trials.hpp"

namespace weft::perf {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<int64_t> parseInteger(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// What each flag does with its value; returns an error message or "".
using Apply = std::string (*)(Options&, std::string_view);

struct Flag {
  char shortName;
  bool takesValue;
  std::string_view longName;
  Apply apply;
};

std::string badValue(std::string_view flag, std::string_view value, std::string_view expected) {
  return fmt::format("{} {}: expected {}", flag, value.empty() ? "''" : value, expected);
}

// An integer flag within [lo, hi], stored through `field`.
template <int Options::*field>
std::string setInt(Options& o, std::string_view v, std::string_view flag, int lo, int hi,
                   std::string_view expected) {
  const auto n = parseInteger(v);
  if (!n || *n < lo || *n > hi) return badValue(flag, v, expected);
  o.*field = static_cast<int>(*n);
  return "";
}

constexpr int kIntMax = std::numeric_limits<int>::max();

const Flag kFlags[] = {
    {'b', true, "minbytes",
     [](Options& o, std::string_view v) -> std::string {
       const auto n = parseBytes(v);
       if (!n) return badValue("-b", v, "a size in bytes such as 8, 64K, 1M or 2G");
       o.minBytes = *n;
       return "";
     }},
    {'e', true, "maxbytes",
     [](Options& o, std::string_view v) -> std::string {
       const auto n = parseBytes(v);
       if (!n) return badValue("-e", v, "a size in bytes such as 8, 64K, 1M or 2G");
       o.maxBytes = *n;
       return "";
     }},
    {'f', true, "stepfactor",
     [](Options& o, std::string_view v) -> std::string {
       const auto n = parseInteger(v);
       if (!n || *n < 2) return badValue("-f", v, "an integer factor of at least 2");
       o.stepFactor = static_cast<uint64_t>(*n);
       return "";
     }},
    {'i', true, "stepbytes",
     [](Options& o, std::string_view v) -> std::string {
       const auto n = parseBytes(v);
       if (!n || *n == 0) return badValue("-i", v, "an increment of at least 1 byte");
       o.stepBytes = *n;
       return "";
     }},
    {'n', true, "iters",
     [](Options& o, std::string_view v) {
       return setInt<&Options::iters>(o, v, "-n", 1, kIntMax, "at least 1 iteration");
     }},
    {'w', true, "warmup_iters",
     [](Options& o, std::string_view v) {
       return setInt<&Options::warmupIters>(o, v, "-w", 0, kIntMax, "0 or more iterations");
     }},
    {'c', true, "check",
     [](Options& o, std::string_view v) {
       return setInt<&Options::checkIters>(o, v, "-c", 0, kIntMax, "0 or more iterations");
     }},
    {'d', true, "datatype",
     [](Options& o, std::string_view v) -> std::string {
       if (lower(v) == "all") {
         o.datatypes.clear();
         for (const DatatypeInfo& d : kDatatypes) o.datatypes.push_back(d.type);
         return "";
       }
       const auto t = parseDatatype(v);
       if (!t)
         return badValue("-d", v,
                         "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 "
                         "f8e4m3 f8e5m2 or all");
       o.datatypes = {*t};
       return "";
     }},
    {'o', true, "op",
     [](Options& o, std::string_view v) -> std::string {
       if (lower(v) == "all") {
         o.ops.assign(kReduceOps.begin(), kReduceOps.end());
         return "";
       }
       const auto op = parseReduceOp(v);
       if (!op) return badValue("-o", v, "sum prod max min avg premulsum or all");
       o.ops = {*op};
       return "";
     }},
    {'r', true, "root",
     [](Options& o, std::string_view v) {
       return setInt<&Options::root>(o, v, "-r", 0, kIntMax, "a rank, 0 or more");
     }},
    {'a', true, "average",
     [](Options& o, std::string_view v) -> std::string {
       const auto n = parseInteger(v);
       if (!n || *n < 0 || *n > 3)
         return badValue("-a", v, "0 (rank 0), 1 (average), 2 (min) or 3 (max)");
       o.combine = static_cast<TimeCombine>(*n);
       return "";
     }},
    {'z', true, "blocking",
     [](Options& o, std::string_view v) -> std::string {
       const auto n = parseInteger(v);
       if (!n || (*n != 0 && *n != 1)) return badValue("-z", v, "0 or 1");
       o.blocking = *n == 1;
       return "";
     }},
    {'R', true, "local_register",
     [](Options& o, std::string_view v) -> std::string {
       const auto n = parseInteger(v);
       if (!n || (*n != 0 && *n != 1)) return badValue("-R", v, "0 or 1");
       o.registered = *n == 1;
       return "";
     }},
    {'J', true, "output_file",
     [](Options& o, std::string_view v) -> std::string {
       if (v.empty()) return badValue("-J", v, "a file name");
       o.jsonPath = std::string(v);
       return "";
     }},
    {'t', true, "nthreads",
     [](Options& o, std::string_view v) -> std::string {
       const auto n = parseInteger(v);
       if (!n || *n < 1 || *n > 1024) return badValue("-t", v, "1 to 1024 threads");
       o.threads = static_cast<int>(*n);
       o.threadsGiven = true;
       return "";
     }},
    // Long only (nccl-tests has no such flag).
    {'\0', true, "baseline",
     [](Options& o, std::string_view v) -> std::string {
       if (lower(v) != "mpi" && lower(v) != "none") return badValue("--baseline", v, "mpi or none");
       o.baselineMpi = lower(v) == "mpi";
       return "";
     }},
    {'\0', true, "calibrate",
     [](Options& o, std::string_view v) -> std::string {
       if (v.empty()) return badValue("--calibrate", v, "a file name");
       o.calibratePath = std::string(v);
       return "";
     }},
    {'\0', true, "link",
     [](Options& o, std::string_view v) -> std::string {
       if (v != "shm" && v != "ucx" && v != "net") return badValue("--link", v, "shm, ucx or net");
       o.calibrateLink = std::string(v);
       return "";
     }},
    {'h', false, "help", [](Options&, std::string_view) { return std::string(); }},
};

const Flag* findShort(char c) {
  for (const Flag& f : kFlags)
    if (f.shortName == c) return &f;
  return nullptr;
}

const Flag* findLong(std::string_view name) {
  for (const Flag& f : kFlags)
    if (f.longName == name) return &f;
  if (name == "json") return findShort('J');
  return nullptr;
}

ParseOutcome error(std::string message) {
  ParseOutcome out;
  out.kind = ParseOutcome::Kind::Error;
  out.message = std::move(message);
  return out;
}

}  // namespace

std::optional<weftDataType_t> parseDatatype(std::string_view name) {
  const std::string n = lower(name);
  for (const DatatypeInfo& d : kDatatypes)
    if (d.name == n) return d.type;
  struct Alias {
    std::string_view name;
    weftDataType_t type;
  };
  static constexpr Alias kAliases[] = {
      {"char", weftInt8},          {"int", weftInt32},           {"fp16", weftFloat16},
      {"float16", weftFloat16},    {"float32", weftFloat32},     {"fp32", weftFloat32},
      {"float64", weftFloat64},    {"fp64", weftFloat64},        {"bf16", weftBfloat16},
      {"e4m3", weftFloat8e4m3},    {"fp8_e4m3", weftFloat8e4m3}, {"e5m2", weftFloat8e5m2},
      {"fp8_e5m2", weftFloat8e5m2}};
  for (const Alias& a : kAliases)
    if (a.name == n) return a.type;
  return std::nullopt;
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  const std::string n = lower(name);
  for (ReduceOp op : kReduceOps)
    if (reduceOpName(op) == n) return op;
  if (n == "mulsum") return ReduceOp::PreMulSum;
  return std::nullopt;
}

std::optional<uint64_t> parseBytes(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int shift = 0;
  switch (text.back()) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: break;
  }
  if (shift != 0) text.remove_suffix(1);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) return std::nullopt;
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  if (value > (std::numeric_limits<uint64_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

ParseOutcome parseOptions(std::span<const char* const> args) {
  ParseOutcome out;
  Options& o = out.options;
  bool collectiveSeen = false, help = false;
  bool minGiven = false, maxGiven = false, factorGiven = false, stepGiven = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const Flag* flag = nullptr;
    std::string name;
    std::optional<std::string_view> value;
    if (arg.starts_with("--") && arg.size() > 2) {
      std::string_view body = arg.substr(2);
      const size_t eq = body.find('=');
      if (eq != std::string_view::npos) {
        value = body.substr(eq + 1);
        body = body.substr(0, eq);
      }
      flag = findLong(body);
      name = fmt::format("--{}", body);
      if (!flag) return error(fmt::format("unknown flag {}", name));
      if (!flag->takesValue && value) return error(fmt::format("{} takes no value", name));
    } else if (arg.starts_with("-") && arg.size() > 1) {
      flag = findShort(arg[1]);
      name = std::string(arg.substr(0, 2));
      if (!flag) return error(fmt::format("unknown flag {}", arg));
      if (arg.size() > 2) {
        if (!flag->takesValue) return error(fmt::format("unknown flag {}", arg));
        value = arg.substr(2);
      }
    } else {
      if (collectiveSeen) return error(fmt::format("unexpected argument '{}'", arg));
      const auto c = parseCollective(arg);
      if (!c)
        return error(fmt::format(
            "unknown collective '{}': expected all_reduce all_gather reduce_scatter broadcast "
            "reduce alltoall gather scatter or sendrecv",
            arg));
      o.collective = *c;
      collectiveSeen = true;
      continue;
    }
    if (flag->takesValue && !value) {
      if (i + 1 >= args.size()) return error(fmt::format("{} needs a value", name));
      value = args[++i];
    }
    const std::string message = flag->apply(o, value.value_or(""));
    if (!message.empty()) return error(message);
    switch (flag->shortName) {
      case 'h': help = true; break;
      case 'b': minGiven = true; break;
      case 'e': maxGiven = true; break;
      case 'f': factorGiven = true; break;
      case 'i': stepGiven = true; break;
      default: break;
    }
  }
  if (help) {
    out.kind = ParseOutcome::Kind::Help;
    return out;
  }
  if (!o.calibrateLink.empty() && o.calibratePath.empty())
    return error("--link names the link class --calibrate measures: give --calibrate FILE too");
  if (!o.calibratePath.empty()) {
    if (collectiveSeen)
      return error("--calibrate measures links, reductions and copies, not a collective: drop it");
    return out;
  }
  if (!collectiveSeen)
    return error(
        "missing the collective: all_reduce all_gather reduce_scatter broadcast reduce alltoall "
        "gather scatter or sendrecv");
  if (factorGiven && stepGiven)
    return error("-f (multiply) and -i (add) both set the step between sizes: give one of them");
  // A lone -b above the default -e (or -e below the default -b) means that one size.
  if (!maxGiven && o.minBytes > o.maxBytes) o.maxBytes = o.minBytes;
  if (!minGiven && o.maxBytes < o.minBytes) o.minBytes = o.maxBytes;
  if (o.minBytes > o.maxBytes)
    return error(fmt::format("-b {} is larger than -e {}", o.minBytes, o.maxBytes));
  return out;
}

std::string usage(std::string_view program) {
  return fmt::format(
      R"(Usage: {0} <collective> [flags]
Measures weft collectives over a range of sizes, with nccl-tests' flags and columns.

Collectives: all_reduce all_gather reduce_scatter broadcast reduce alltoall gather scatter
             sendrecv

Flags:
  -b, --minbytes <size>     smallest size in bytes (default 32M); K, M, G are powers of 1024
  -e, --maxbytes <size>     largest size in bytes (default 32M)
  -f, --stepfactor <n>      multiply the size by n from one row to the next (default 2)
  -i, --stepbytes <size>    add this many bytes from one row to the next instead of -f
  -n, --iters <n>           timed iterations per row (default 20)
  -w, --warmup_iters <n>    warm-up iterations per row (default 1); ranks that are processes
                            try paths on the first {1} calls of a size: -w {1} times the one
                            they keep
  -c, --check <n>           verified iterations per row; 0 disables verification (default 1)
  -d, --datatype <type>     int8 uint8 int32 uint32 int64 uint64 half float double bfloat16
                            f8e4m3 f8e5m2, or all (default float)
  -o, --op <op>             sum prod max min avg premulsum (printed mulsum), or all
                            (default sum); only all_reduce, reduce_scatter and reduce use it
  -r, --root <rank>         root of broadcast, reduce, gather and scatter (default 0)
  -a, --average <0-3>       per-rank times combine as 0 rank 0's, 1 the average (default),
                            2 the minimum, 3 the maximum
  -z, --blocking <0|1>      0: calls are enqueued on a weft stream, and the timed loop
                            synchronizes once at its end (default); 1: blocking calls on a
                            NULL stream
  -R, --local_register <0|1>
                            1: buffers from weftMemAlloc, registered with weftCommRegister
                            (every local rank maps them: zero copy); default 0 (malloc)
  -J, --output_file <file>  also write the parameters and every row as JSON
  -t, --nthreads <n>        ranks as threads of this process (default 1); not under a launcher
      --baseline <mpi|none> also time MPI's collective on the same buffers, alternating with
                            weft's, and print its time and weft/mpi (runs weft-perf-mpi)
      --calibrate <file>    instead of a sweep: measure the cost model's link, reduction and
                            copy parameters and write them to a tuning file (WEFT_TUNE_FILE);
                            ranks from a launcher, one per core: weftrun -n 2 {0} --calibrate F
      --link <shm|ucx|net>  the link class --calibrate measures (default: shm, or ucx with
                            WEFT_SHM_DISABLE=1); net: run one rank per host
  -h, --help                this text

Sizes count the whole buffer for all_gather, reduce_scatter, alltoall, gather and scatter.
Under a launcher (weftrun, mpirun, srun, torchrun) every process is one rank:
  weftrun -n 4 {0} all_reduce -b 8 -e 128M -f 2
  mpirun -np 4 {0} all_reduce -b 8 -e 128M -f 2
Without it, -t N runs N ranks as threads:
  {0} all_reduce -b 8 -e 128M -f 2 -t 4
Exit status: 0 success, 1 a weft call failed or a result was wrong, 2 bad command line.
)",
      program, PathTrials::kTuningCalls);
}

}  // namespace weft::perf
