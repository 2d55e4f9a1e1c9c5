#include "options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "algorithms/reduce/datatype.hpp"
#include "lib/tuner/algo_selection.hpp"

namespace weft::sim {
namespace {

double parseNumber(const std::string& flag, std::string_view text, std::string_view expected) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0)
    throw UsageError(fmt::format("{} '{}': expected {}", flag, text, expected));
  return v;
}

// Splits "123.5us" into the number and its unit.
std::pair<std::string_view, std::string_view> numberAndUnit(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  return {s.substr(0, i), s.substr(i)};
}

int parseCount(const std::string& flag, const std::string& text, int lo, int hi) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    throw UsageError(fmt::format("{} '{}': expected an integer in [{}, {}]", flag, text, lo, hi));
  return v;
}

}  // namespace

uint64_t parseSize(const std::string& flag, const std::string& text) {
  auto [number, unit] = numberAndUnit(text);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  uint64_t scale = 1;
  if (unit == "K" || unit == "k")
    scale = uint64_t{1} << 10;
  else if (unit == "M" || unit == "m")
    scale = uint64_t{1} << 20;
  else if (unit == "G" || unit == "g")
    scale = uint64_t{1} << 30;
  else if (!unit.empty())
    scale = 0;
  if (ec != std::errc() || end != number.data() + number.size() || number.empty() || !scale ||
      v > (uint64_t{1} << 50) / scale)
    throw UsageError(
        fmt::format("{} '{}': expected a size in bytes such as 8, 64K, 1M or 2G", flag, text));
  return v * scale;
}

LinkParams parseLink(const std::string& flag, const std::string& text) {
  LinkParams link;
  bool lat = false, bw = false;
  std::string_view rest = text;
  const std::string expected =
      "'lat=<time>,bw=<rate>[,msg=<time>]' such as 'lat=1us,bw=200GB/s' or "
      "'lat=5us,bw=25GB/s,msg=5us'";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw UsageError(
          fmt::format("{} '{}': '{}' is not key=value; expected {}", flag, text, item, expected));
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    const auto [number, unit] = numberAndUnit(value);
    if (key == "lat" || key == "msg") {
      const double v = parseNumber(flag, number, "a time such as 1us");
      const double us = unit == "ns"   ? v / 1000
                        : unit == "us" ? v
                        : unit == "ms" ? v * 1000
                        : unit == "s"  ? v * 1e6
                                       : -1;
      if (us < 0)
        throw UsageError(
            fmt::format("{} '{}': {} unit '{}' (expected ns, us, ms or s)", flag, text,
                        key == "lat" ? "latency" : "message time", unit));
      if (key == "msg") {
        link.messageUs = us;
        continue;
      }
      link.latencyUs = us;
      lat = true;
    } else if (key == "bw") {
      const double v = parseNumber(flag, number, "a bandwidth such as 25GB/s");
      const double gbps = unit == "B/s"                        ? v / 1e9
                          : unit == "KB/s"                     ? v / 1e6
                          : unit == "MB/s"                     ? v / 1e3
                          : unit == "GB/s"                     ? v
                          : unit == "TB/s"                     ? v * 1e3
                          : unit == "Gbit/s" || unit == "Gb/s" ? v / 8
                                                               : -1;
      if (gbps <= 0)
        throw UsageError(
            fmt::format("{} '{}': bandwidth '{}' (expected a positive number with "
                        "B/s, KB/s, MB/s, GB/s, TB/s or Gbit/s)",
                        flag, text, value));
      link.bandwidthGBps = gbps;
      bw = true;
    } else {
      throw UsageError(
          fmt::format("{} '{}': unknown key '{}'; expected {}", flag, text, key, expected));
    }
  }
  if (!lat || !bw) throw UsageError(fmt::format("{} '{}': expected {}", flag, text, expected));
  return link;
}

std::string usage() {
  return "usage: weft-sim [--ranks N] [--ranks-per-host N] [--intra 'lat=1us,bw=200GB/s']\n"
         "                [--inter 'lat=5us,bw=25GB/s,msg=5us'] [--reduce GB/s] [--copy GB/s]\n"
         "                [--tune-file FILE] [--transport shm|ucx] [--cores C]\n"
         "                [--algo WEFT_ALGO] [-b MIN] [-e MAX] [-f FACTOR]\n"
         "                [-d TYPE] [-J] COLLECTIVE\n"
         "  COLLECTIVE: all_reduce, broadcast, reduce, all_gather, reduce_scatter, alltoall,\n"
         "              gather or scatter\n"
         "  Prints, per size, every algorithm's predicted time and bus bandwidth and the one\n"
         "  the tuner picks (-J: JSON). --transport: the link class inside a host, shm\n"
         "  (default) or ucx (WEFT_SHM_DISABLE=1); --cores: cores per host, which\n"
         "  more ranks than cores share (the tuning file's host.cores; a fraction where\n"
         "  hosts share cores, as the namespaced hosts of the test bed do).\n"
         "       weft-sim --topo FILE [--gpus I,J,...] [--root R] [-J]\n"
         "  For the GPUs of an hwloc XML host (default all): broadcast, reduce, allreduce and\n"
         "  allgather throughput\n"
         "  of the packed trees and of the best single ring, against the max-flow bound.\n";
}

Options parseOptions(const std::vector<std::string>& args) {
  Options o;
  bool haveCollective = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", a));
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--ranks" || a == "-n") {
      o.ranks = parseCount(a, value(), 1, 1 << 20);
    } else if (a == "--ranks-per-host") {
      o.ranksPerHost = parseCount(a, value(), 1, 1 << 20);
    } else if (a == "--intra") {
      o.intra = parseLink(a, value());
      o.intraSet = true;
    } else if (a == "--inter") {
      o.inter = parseLink(a, value());
      o.interSet = true;
    } else if (a == "--reduce") {
      o.reduceGBps = parseNumber(a, value(), "a rate in GB/s");
    } else if (a == "--copy") {
      o.copyGBps = parseNumber(a, value(), "a rate in GB/s");
    } else if (a == "--tune-file") {
      o.tuneFile = value();
    } else if (a == "--transport") {
      o.transport = value();
      if (o.transport != "shm" && o.transport != "ucx")
        throw UsageError(fmt::format("--transport '{}': expected shm or ucx", o.transport));
    } else if (a == "--cores") {
      o.cores = parseNumber(a, value(), "a number of cores (0: a core per rank)");
    } else if (a == "--algo") {
      o.algo = value();
      try {
        (void)parseAlgoSelection(o.algo);
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("--algo: {}", e.what()));
      }
    } else if (a == "-b" || a == "--minbytes") {
      o.minBytes = parseSize(a, value());
    } else if (a == "-e" || a == "--maxbytes") {
      o.maxBytes = parseSize(a, value());
    } else if (a == "-f" || a == "--stepfactor") {
      o.stepFactor = parseNumber(a, value(), "a factor above 1");
      if (o.stepFactor <= 1) throw UsageError(fmt::format("{}: the factor must be above 1", a));
    } else if (a == "-d" || a == "--datatype") {
      const std::string& v = value();
      const auto type = parseDatatype(v);
      if (!type) throw UsageError(fmt::format("{} '{}': unknown datatype", a, v));
      o.datatype = *type;
    } else if (a == "--topo") {
      o.topoFile = value();
    } else if (a == "--gpus") {
      const std::string& v = value();
      for (size_t begin = 0; begin <= v.size();) {
        const size_t end = std::min(v.find(',', begin), v.size());
        o.gpus.push_back(parseCount(a, v.substr(begin, end - begin), 0, 1023));
        begin = end + 1;
      }
    } else if (a == "--root") {
      o.root = parseCount(a, value(), 0, 1023);
    } else if (a == "-J" || a == "--json") {
      o.json = true;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError(fmt::format("unknown option '{}'", a));
    } else if (haveCollective) {
      throw UsageError(fmt::format("unexpected argument '{}' (one collective per run)", a));
    } else {
      if (!parseCollectiveName(a, o.collective))
        throw UsageError(fmt::format("unknown collective '{}'", a));
      haveCollective = true;
    }
  }
  if (o.help || !o.topoFile.empty()) return o;
  if (!haveCollective) throw UsageError("no collective given");
  if (o.ranksPerHost == 0 || o.ranksPerHost > o.ranks) o.ranksPerHost = o.ranks;
  if (o.transport.empty()) o.transport = "shm";
  if (o.maxBytes < o.minBytes)
    throw UsageError(fmt::format("-e {} is below -b {}", o.maxBytes, o.minBytes));
  return o;
}

}  // namespace weft::sim
