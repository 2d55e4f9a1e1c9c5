#include "lib/topology/picture.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "lib/base/error.hpp"

namespace weft::topology {
namespace {

constexpr uint32_t kViewMagic = 0x77747031;  // "wtp1"

class Writer {
 public:
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  std::vector<uint8_t> bytes;

 private:
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
};

class Reader {
 public:
  Reader(std::span<const uint8_t> b, int rank) : b_(b), rank_(rank) {}
  uint32_t u32() { return get<uint32_t>(); }
  int32_t i32() { return get<int32_t>(); }
  double f64() { return get<double>(); }
  std::string str() {
    const uint32_t n = u32();
    need(n);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  // A count of items of at least `minBytes` each that must fit in what is left.
  uint32_t count(size_t minBytes) {
    const uint32_t n = u32();
    need(size_t{n} * minBytes);
    return n;
  }
  void end() const {
    if (pos_ != b_.size()) bad("trailing bytes");
  }
  [[noreturn]] void bad(const char* what) const {
    fail(weftInternalError, "topology from rank {}: malformed description ({} at byte {} of {})",
         rank_, what, pos_, b_.size());
  }

 private:
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  void need(size_t n) const {
    if (n > b_.size() - pos_) bad("truncated");
  }
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  int rank_;
};

}  // namespace

std::vector<uint8_t> encodeView(const LocalView& v) {
  Writer w;
  w.u32(kViewMagic);
  w.str(v.hostId);
  w.i32(v.cpu);
  w.i32(v.gpu);
  w.u32(static_cast<uint32_t>(v.graph.nodes.size()));
  for (const Node& n : v.graph.nodes) {
    w.u32(static_cast<uint32_t>(n.kind));
    w.i32(n.parent);
    w.i32(n.index);
    w.str(n.name);
    w.str(n.busId);
    w.u32(static_cast<uint32_t>(n.cpus.size()));
    for (int c : n.cpus) w.i32(c);
  }
  w.u32(static_cast<uint32_t>(v.graph.links.size()));
  for (const Link& l : v.graph.links) {
    w.i32(l.a);
    w.i32(l.b);
    w.u32(static_cast<uint32_t>(l.kind));
    w.f64(l.bandwidthGBps);
    w.f64(l.latencyUs);
  }
  return std::move(w.bytes);
}

LocalView decodeView(std::span<const uint8_t> bytes, int rank) {
  Reader r(bytes, rank);
  if (r.u32() != kViewMagic) r.bad("wrong magic");
  LocalView v;
  v.hostId = r.str();
  v.cpu = r.i32();
  v.gpu = r.i32();
  const uint32_t nodes = r.count(24);
  for (uint32_t i = 0; i < nodes; ++i) {
    Node n;
    const uint32_t kind = r.u32();
    if (kind > static_cast<uint32_t>(NodeKind::NvSwitch)) r.bad("unknown node kind");
    n.kind = static_cast<NodeKind>(kind);
    n.parent = r.i32();
    if (n.parent < -1 || n.parent >= static_cast<int>(nodes)) r.bad("parent out of range");
    n.index = r.i32();
    n.name = r.str();
    n.busId = r.str();
    const uint32_t cpus = r.count(4);
    for (uint32_t c = 0; c < cpus; ++c) n.cpus.push_back(r.i32());
    v.graph.nodes.push_back(std::move(n));
  }
  const uint32_t links = r.count(28);
  for (uint32_t i = 0; i < links; ++i) {
    Link l;
    l.a = r.i32();
    l.b = r.i32();
    if (l.a < 0 || l.b < 0 || l.a >= static_cast<int>(nodes) || l.b >= static_cast<int>(nodes))
      r.bad("link end out of range");
    const uint32_t kind = r.u32();
    if (kind > static_cast<uint32_t>(LinkKind::Network)) r.bad("unknown link kind");
    l.kind = static_cast<LinkKind>(kind);
    l.bandwidthGBps = r.f64();
    l.latencyUs = r.f64();
    v.graph.links.push_back(l);
  }
  r.end();
  if (v.graph.nodesOf(NodeKind::Host).size() != 1) r.bad("not exactly one host");
  return v;
}

SystemPicture mergeViews(std::span<const LocalView> views) {
  SystemPicture p;
  std::map<std::string, int> hostNode;  // host id -> its Host node in the merged graph
  std::vector<int> hosts;
  for (const LocalView& v : views) {
    if (hostNode.count(v.hostId)) continue;
    const int base = static_cast<int>(p.graph.nodes.size());
    p.graph.append(v.graph);
    const int host = base + v.graph.nodesOf(NodeKind::Host).front();
    hostNode[v.hostId] = host;
    for (int other : hosts) {
      const int nics =
          std::max(1, std::min(p.graph.count(NodeKind::Nic, p.graph.nodes[host].host),
                               p.graph.count(NodeKind::Nic, p.graph.nodes[other].host)));
      p.graph.link(other, host, LinkKind::Network, nics * kNetworkGBps, kNetworkLatencyUs);
    }
    hosts.push_back(host);
  }
  for (const LocalView& v : views) {
    const int host = hostNode[v.hostId];
    RankPlace place = placeOfCpu(p.graph, host, v.cpu);
    if (v.gpu >= 0) place.gpu = p.graph.gpu(p.graph.nodes[host].host, v.gpu);
    p.places.push_back(place);
  }
  p.ring = ringOrder(p.places);
  return p;
}

std::string formatPictureJson(const SystemPicture& p) {
  std::string out = "{\"graph\": " + formatJson(p.graph) + ",\n\"ranks\": [";
  for (size_t r = 0; r < p.places.size(); ++r) {
    const RankPlace& x = p.places[r];
    out += fmt::format(
        "{}\n  {{\"rank\": {}, \"host\": {}, \"package\": {}, \"numa\": {}, "
        "\"cpu\": {}, \"gpu\": {}}}",
        r ? "," : "", r, x.host, x.package, x.numa, x.cpu, x.gpu);
  }
  return out + fmt::format("],\n\"ring\": [{}]}}\n", fmt::join(p.ring, ", "));
}

}  // namespace weft::topology
