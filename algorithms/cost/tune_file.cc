#include "algorithms/cost/tune_file.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "algorithms/reduce/datatype.hpp"
#include "lib/base/error.hpp"

namespace weft {

const char* linkClassName(LinkClass c) noexcept {
  switch (c) {
    case LinkClass::Shm: return "shm";
    case LinkClass::Ucx: return "ucx";
    case LinkClass::Net: return "net";
  }
  return "?";
}

const LinkParams& MachineParams::link(LinkClass c) const {
  switch (c) {
    case LinkClass::Shm: return shm;
    case LinkClass::Ucx: return ucx;
    case LinkClass::Net: break;
  }
  return net;
}

double MachineParams::reduceRate(weftDataType_t type) const {
  const int t = static_cast<int>(type);
  if (t >= 0 && t < static_cast<int>(reduceGBpsByType.size()) && reduceGBpsByType[t] > 0)
    return reduceGBpsByType[t];
  return reduceGBps;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

MachineParams parseTuneFile(std::string_view text, const std::string& name) {
  MachineParams p;
  p.source = name;
  int lineNo = 0;
  bool sawVersion = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineNo;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    auto bad = [&](const std::string& why) {
      fail(weftInvalidArgument, "WEFT_TUNE_FILE={}:{}: {}", name, lineNo, why);
    };
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) bad(fmt::format("expected 'key = value', got '{}'", line));
    const std::string key(trim(line.substr(0, eq)));
    const std::string_view valueText = trim(line.substr(eq + 1));
    double value = 0;
    const auto [end, ec] =
        std::from_chars(valueText.data(), valueText.data() + valueText.size(), value);
    if (ec != std::errc() || end != valueText.data() + valueText.size() || !std::isfinite(value))
      bad(fmt::format("{}: '{}' is not a number", key, valueText));
    if (key == "version") {
      if (value != 1)
        bad(fmt::format("version {} is not supported (this weft reads 1)", valueText));
      sawVersion = true;
      continue;
    }
    const bool mayBeZero = std::string_view(key).ends_with(".message_us");
    if (value < 0 || (value == 0 && !mayBeZero))
      bad(fmt::format("{} must be positive", key));
    double* field = nullptr;
    for (LinkClass c : {LinkClass::Shm, LinkClass::Ucx, LinkClass::Net}) {
      LinkParams& link = c == LinkClass::Shm ? p.shm : c == LinkClass::Ucx ? p.ucx : p.net;
      const std::string prefix = std::string(linkClassName(c)) + ".";
      if (key == prefix + "latency_us") field = &link.latencyUs;
      if (key == prefix + "bandwidth_gbps") field = &link.bandwidthGBps;
      if (key == prefix + "message_us") field = &link.messageUs;
    }
    if (key == "reduce_gbps") field = &p.reduceGBps;
    if (key == "copy_gbps") field = &p.copyGBps;
    if (key.rfind("reduce_gbps.", 0) == 0) {
      const auto type = parseDatatype(std::string_view(key).substr(12));
      if (!type) bad(fmt::format("{}: unknown datatype '{}'", key, key.substr(12)));
      field = &p.reduceGBpsByType[static_cast<int>(*type)];
    }
    if (!field) bad(fmt::format("unknown key '{}'", key));
    *field = value;
  }
  if (!sawVersion)
    fail(weftInvalidArgument, "WEFT_TUNE_FILE={}: no 'version = 1' line (is it a tuning file?)",
         name);
  return p;
}

MachineParams loadTuneFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(weftInvalidArgument, "WEFT_TUNE_FILE={}: cannot be read", path);
  std::stringstream text;
  text << in.rdbuf();
  return parseTuneFile(text.str(), path);
}

std::string formatTuneFile(const MachineParams& p) {
  std::string out = "# weft tuning file (algorithms/cost/tune_file.hpp)\nversion = 1\n";
  for (LinkClass c : {LinkClass::Shm, LinkClass::Ucx, LinkClass::Net}) {
    const LinkParams& l = p.link(c);
    out += fmt::format("{0}.latency_us = {1}\n{0}.bandwidth_gbps = {2}\n{0}.message_us = {3}\n",
                       linkClassName(c), l.latencyUs, l.bandwidthGBps, l.messageUs);
  }
  out += fmt::format("reduce_gbps = {}\n", p.reduceGBps);
  for (size_t t = 0; t < p.reduceGBpsByType.size(); ++t)
    if (p.reduceGBpsByType[t] > 0)
      out += fmt::format("reduce_gbps.{} = {}\n", datatypeName(static_cast<weftDataType_t>(t)),
                         p.reduceGBpsByType[t]);
  out += fmt::format("copy_gbps = {}\n", p.copyGBps);
  return out;
}

}  // namespace weft
