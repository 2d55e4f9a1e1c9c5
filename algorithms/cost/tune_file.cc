#include "algorithms/cost/tune_file.hpp"

#include <algorithm>
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

double RateCurve::at(uint64_t bytes, double flat) const {
  if (points.empty()) return flat;
  if (bytes <= points.front().first) return points.front().second;
  if (bytes >= points.back().first) return points.back().second;
  size_t i = 1;
  while (points[i].first < bytes) ++i;
  const auto& [x0, r0] = points[i - 1];
  const auto& [x1, r1] = points[i];
  const double t = std::log(static_cast<double>(bytes) / static_cast<double>(x0)) /
                   std::log(static_cast<double>(x1) / static_cast<double>(x0));
  return r0 + t * (r1 - r0);
}

void RateCurve::add(uint64_t bytes, double gbps) {
  auto it = std::lower_bound(points.begin(), points.end(), bytes,
                             [](const auto& p, uint64_t b) { return p.first < b; });
  if (it != points.end() && it->first == bytes)
    it->second = gbps;
  else
    points.insert(it, {bytes, gbps});
}

MachineParams MachineParams::atSize(uint64_t bytes) const {
  MachineParams p = *this;
  for (LinkClass c : {LinkClass::Shm, LinkClass::Ucx, LinkClass::Net}) {
    LinkParams& l = c == LinkClass::Shm ? p.shm : c == LinkClass::Ucx ? p.ucx : p.net;
    l.bandwidthGBps = bandwidthCurve[static_cast<int>(c)].at(bytes, l.bandwidthGBps);
    p.bandwidthCurve[static_cast<int>(c)] = {};
  }
  // Every datatype's reduction slows or speeds with size as float32's does.
  const double reduceScale = reduceCurve.at(bytes, reduceGBps) / reduceGBps;
  p.reduceGBps *= reduceScale;
  for (double& r : p.reduceGBpsByType) r *= reduceScale;
  p.copyGBps = copyCurve.at(bytes, copyGBps);
  p.reduceCurve = p.copyCurve = {};
  return p;
}

namespace {

// The curve a `key@bytes` line adds a point to, or null for a key without one.
RateCurve* curveOf(MachineParams& p, std::string_view key) {
  for (LinkClass c : {LinkClass::Shm, LinkClass::Ucx, LinkClass::Net})
    if (key == std::string(linkClassName(c)) + ".bandwidth_gbps")
      return &p.bandwidthCurve[static_cast<int>(c)];
  if (key == "reduce_gbps") return &p.reduceCurve;
  if (key == "copy_gbps") return &p.copyCurve;
  return nullptr;
}

std::string formatCurve(std::string_view key, const RateCurve& curve) {
  std::string out;
  for (const auto& [bytes, gbps] : curve.points)
    out += fmt::format("{}@{} = {}\n", key, bytes, gbps);
  return out;
}

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
    std::string key(trim(line.substr(0, eq)));
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
    if (const size_t at = key.find('@'); at != std::string::npos) {
      const std::string base = key.substr(0, at);
      const std::string_view sizeText = std::string_view(key).substr(at + 1);
      uint64_t bytes = 0;
      const auto [sizeEnd, sizeEc] =
          std::from_chars(sizeText.data(), sizeText.data() + sizeText.size(), bytes);
      RateCurve* curve = curveOf(p, base);
      if (!curve)
        bad(fmt::format("'{}': only link bandwidths, reduce_gbps and copy_gbps take a size", key));
      if (sizeEc != std::errc() || sizeEnd != sizeText.data() + sizeText.size() || bytes == 0)
        bad(fmt::format("'{}': expected {}@<bytes>, a positive whole number", key, base));
      if (!(value > 0)) bad(fmt::format("{} must be positive", key));
      curve->add(bytes, value);
      continue;
    }
    if (key == "host.cores") {
      if (!(value >= 0) || value > 1e6)
        bad(fmt::format("host.cores: '{}' is not a number of cores (0: a core per rank)",
                        valueText));
      p.cores = value;
      continue;
    }
    const bool mayBeZero =
        std::string_view(key).ends_with(".message_us") || key == "host.switch_us";
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
    if (key == "host.switch_us") field = &p.switchUs;
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
    out += formatCurve(std::string(linkClassName(c)) + ".bandwidth_gbps",
                       p.bandwidthCurve[static_cast<int>(c)]);
  }
  out += fmt::format("reduce_gbps = {}\n", p.reduceGBps);
  out += formatCurve("reduce_gbps", p.reduceCurve);
  for (size_t t = 0; t < p.reduceGBpsByType.size(); ++t)
    if (p.reduceGBpsByType[t] > 0)
      out += fmt::format("reduce_gbps.{} = {}\n", datatypeName(static_cast<weftDataType_t>(t)),
                         p.reduceGBpsByType[t]);
  out += fmt::format("copy_gbps = {}\n", p.copyGBps);
  out += formatCurve("copy_gbps", p.copyCurve);
  if (p.cores > 0) out += fmt::format("host.cores = {:g}\n", p.cores);
  if (p.switchUs > 0) out += fmt::format("host.switch_us = {}\n", p.switchUs);
  return out;
}

}  // namespace weft
