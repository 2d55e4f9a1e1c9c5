#include "lib/topology/discover.hpp"

#include <hwloc.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "lib/base/deadline.hpp"
#include "lib/base/env.hpp"
#include "lib/base/error.hpp"
#include "lib/base/log.hpp"
#include "lib/topology/nvml.hpp"

namespace weft::topology {
namespace {

constexpr double kDefaultPcieGBps = 12;  // when hwloc gives no link speed
constexpr unsigned short kNvidia = 0x10de;

std::string describe(const Source& s) {
  if (!s.xmlFile.empty()) return fmt::format("topology file '{}'", s.xmlFile);
  if (!s.synthetic.empty()) return fmt::format("synthetic topology '{}'", s.synthetic);
  return "this machine's topology";
}

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

// Hands the source to hwloc and loads it; false when hwloc rejects it. Shared by the trial in a
// child and the real load.
bool hwlocLoad(hwloc_topology_t raw, const Source& source) {
  // Without this hwloc drops bridges, PCI devices and OS devices, even from XML.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (!source.xmlFile.empty()) {
    if (hwloc_topology_set_xml(raw, source.xmlFile.c_str()) != 0) return false;
  } else if (!source.synthetic.empty()) {
    if (hwloc_topology_set_synthetic(raw, source.synthetic.c_str()) != 0) return false;
  }
  return hwloc_topology_load(raw) == 0;
}

// hwloc 2.9 trusts its input: some malformed XML files crash its importer (fuzz_topology found
// a SEGV in hwloc_bitmap_set under hwloc_insert_object_by_parent). A description given by the
// user is therefore loaded once in a child process first; only one the child loads is loaded
// here, so a bad file is an error, never a crash of the job. Returns false when hwloc rejected
// it (as it would here).
constexpr int kTrialLoaded = 0, kTrialRejected = 3;

bool trialLoadInChild(const Source& source) {
  const pid_t child = fork();
  if (child < 0) fail(weftSystemError, "{}: fork for a trial load: {}", describe(source),
                      std::strerror(errno));
  if (child == 0) {
    // A crash ends the child quietly: no crash report from handlers the process installed.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) signal(sig, SIG_DFL);
    hwloc_topology_t raw = nullptr;
    _exit(hwloc_topology_init(&raw) == 0 && hwlocLoad(raw, source) ? kTrialLoaded
                                                                   : kTrialRejected);
  }
  int status = 0;
  const Deadline deadline = Deadline::afterMs(30 * 1000);
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR)
      fail(weftSystemError, "{}: waiting for the trial load: {}", describe(source),
           std::strerror(errno));
    if (deadline.expired()) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      fail(weftInvalidArgument, "{}: hwloc did not finish loading it within 30 s",
           describe(source));
    }
    usleep(1000);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kTrialLoaded) return true;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kTrialRejected) return false;
  // A signal, or a crash handler's exit code (sanitizers, fuzzers): hwloc crashed.
  fail(weftInvalidArgument,
       "{}: hwloc crashed loading it (trial process {} {}): the description is malformed "
       "(expected hwloc XML, format 2.0, or a synthetic description)",
       describe(source), WIFSIGNALED(status) ? "killed by signal" : "exited with",
       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

// Why hwloc rejects a description.
[[noreturn]] void rejected(const Source& source) {
  if (!source.synthetic.empty() && source.xmlFile.empty())
    fail(weftInvalidArgument,
         "{}: hwloc rejected it (expected a synthetic description such as "
         "'pack:2 numa:1 core:8 pu:1')",
         describe(source));
  fail(weftInvalidArgument,
       "{}: hwloc could not load it (expected hwloc XML, format 2.0, with every object's "
       "cpuset, complete_cpuset, nodeset and complete_nodeset)",
       describe(source));
}

Topology load(const Source& source) {
  if (!source.xmlFile.empty() || !source.synthetic.empty()) {
    if (!source.xmlFile.empty()) {
      struct stat st;
      if (stat(source.xmlFile.c_str(), &st) != 0)
        fail(weftInvalidArgument, "{}: cannot read it: {}", describe(source),
             std::strerror(errno));
    }
    if (!trialLoadInChild(source)) rejected(source);
  }
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) fail(weftSystemError, "hwloc_topology_init failed");
  Topology topo(raw);
  if (!hwlocLoad(raw, source)) rejected(source);
  return topo;
}

std::vector<int> cpusOf(hwloc_const_cpuset_t set) {
  std::vector<int> out;
  if (!set) return out;
  unsigned i;
  hwloc_bitmap_foreach_begin(i, set) {
    out.push_back(static_cast<int>(i));
  }
  hwloc_bitmap_foreach_end();
  return out;
}

// Index in a name like "cuda3" or "mlx5_2" (its trailing digits), or -1.
int trailingIndex(const char* name) {
  if (!name) return -1;
  const size_t len = std::strlen(name);
  size_t i = len;
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  return i == len ? -1 : std::atoi(name + i);
}

std::string busId(hwloc_obj_t pci) {
  const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p = pci->attr->pcidev;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", p.domain, p.bus, p.dev, p.func);
}

class Builder {
 public:
  Builder(hwloc_topology_t topo, const Source& source) : topo_(topo), source_(source) {}

  Graph build() {
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    const char* hostName = hwloc_obj_get_info_by_name(root, "HostName");
    host_ =
        g_.add({NodeKind::Host, 0, -1, 0, hostName ? hostName : "host", "", cpusOf(root->cpuset)});
    addPackages();
    addNuma();
    addPciDevices();
    addNvLinks();
    return std::move(g_);
  }

 private:
  void addPackages() {
    const int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t p = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, i);
      packages_[p] = g_.add(
          {NodeKind::Package, 0, host_, i, fmt::format("Package {}", i), "", cpusOf(p->cpuset)});
    }
    if (n == 0) {  // synthetic descriptions may have none: one package holds everything
      packages_[hwloc_get_root_obj(topo_)] =
          g_.add({NodeKind::Package, 0, host_, 0, "Package 0", "", g_.nodes[host_].cpus});
    }
    std::vector<int> p = g_.nodesOf(NodeKind::Package);
    for (size_t i = 0; i < p.size(); ++i)
      for (size_t j = i + 1; j < p.size(); ++j)
        g_.link(p[i], p[j], LinkKind::Interconnect, kInterconnectGBps, kInterconnectLatencyUs);
  }

  int packageOf(hwloc_obj_t obj) {
    for (hwloc_obj_t o = obj; o; o = o->parent) {
      auto it = packages_.find(o);
      if (it != packages_.end()) return it->second;
    }
    // Attached above the packages (to the machine): the first package stands for the host.
    return g_.nodesOf(NodeKind::Package).front();
  }

  void addNuma() {
    const int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t m = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, i);
      const int pkg = packageOf(m);
      const int node =
          g_.add({NodeKind::Numa, 0, pkg, i, fmt::format("NUMA {}", i), "", cpusOf(m->cpuset)});
      g_.link(pkg, node, LinkKind::Memory, kMemoryGBps, 0.1);
    }
  }

  // The graph node a PCI object hangs from: a switch (one per PCI-to-PCI bridge; a bridge
  // below a bridge of the same vendor and device is a port of the same switch), else the
  // package of its host bridge.
  int attachPoint(hwloc_obj_t parent) {
    if (!parent || parent->type != HWLOC_OBJ_BRIDGE ||
        parent->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
      return packageOf(parent);
    auto it = switches_.find(parent);
    if (it != switches_.end()) return it->second;
    hwloc_obj_t up = parent->parent;
    const hwloc_obj_attr_u::hwloc_pcidev_attr_s& me = parent->attr->bridge.upstream.pci;
    if (up && up->type == HWLOC_OBJ_BRIDGE &&
        up->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI &&
        up->attr->bridge.upstream.pci.vendor_id == me.vendor_id &&
        up->attr->bridge.upstream.pci.device_id == me.device_id)
      return switches_[parent] = attachPoint(up);
    const int above = attachPoint(up);
    const int index = g_.count(NodeKind::PciSwitch);
    const std::string bus =
        fmt::format("{:04x}:{:02x}:{:02x}.{:x}", me.domain, me.bus, me.dev, me.func);
    const int node =
        g_.add({NodeKind::PciSwitch, 0, above, index, fmt::format("switch {}", index), bus, {}});
    g_.link(above, node, LinkKind::Pcie, me.linkspeed > 0 ? me.linkspeed : kDefaultPcieGBps,
            kPcieLatencyUs);
    return switches_[parent] = node;
  }

  void addPciDevices() {
    for (hwloc_obj_t d = hwloc_get_next_pcidev(topo_, nullptr); d;
         d = hwloc_get_next_pcidev(topo_, d)) {
      const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p = d->attr->pcidev;
      const unsigned cls = p.class_id >> 8;
      NodeKind kind;
      if (cls == 0x03)
        kind = NodeKind::Gpu;
      else if (cls == 0x02)
        kind = NodeKind::Nic;
      else if (p.vendor_id == kNvidia && p.class_id == 0x0680)
        kind = NodeKind::NvSwitch;
      else
        continue;
      // Name and index from the OS device (cuda3, mlx5_0), else by order of discovery.
      std::string name;
      int index = -1;
      for (hwloc_obj_t os = d->io_first_child; os; os = os->next_sibling) {
        if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name) continue;
        const auto t = os->attr->osdev.type;
        const bool preferred = (kind == NodeKind::Gpu && t == HWLOC_OBJ_OSDEV_COPROC) ||
                               (kind == NodeKind::Nic && t == HWLOC_OBJ_OSDEV_OPENFABRICS);
        if (preferred || name.empty()) {
          name = os->name;
          index = trailingIndex(os->name);
        }
        if (t == HWLOC_OBJ_OSDEV_GPU || t == HWLOC_OBJ_OSDEV_COPROC) gpuOfOsDev_[os] = -2;
      }
      if (kind == NodeKind::NvSwitch) {
        ++nvswitchChips_;
        if (nvswitch_ >= 0) continue;  // one node stands for the whole fabric
        name = "NVSwitch fabric";
        index = 0;
      }
      if (index < 0) index = g_.count(kind);
      if (name.empty()) name = fmt::format("{} {}", nodeKindName(kind), index);
      const int above = attachPoint(d->parent);
      const int node = g_.add({kind, 0, above, index, name, busId(d), {}});
      g_.link(above, node, LinkKind::Pcie, p.linkspeed > 0 ? p.linkspeed : kDefaultPcieGBps,
              kPcieLatencyUs);
      if (kind == NodeKind::NvSwitch) nvswitch_ = node;
      for (hwloc_obj_t os = d->io_first_child; os; os = os->next_sibling)
        if (gpuOfOsDev_.count(os)) gpuOfOsDev_[os] = node;
    }
    if (nvswitch_ >= 0)
      g_.nodes[nvswitch_].name = fmt::format("NVSwitch fabric ({} chips)", nvswitchChips_);
  }

  void addNvLinks() {
    unsigned nr = 8;
    hwloc_distances_s* found[8];
    if (hwloc_distances_get_by_name(topo_, "NVLinkBandwidth", &nr, found, 0) != 0) nr = 0;
    std::vector<std::vector<double>> matrix;  // GB/s between the GPUs in gpus
    std::vector<int> gpus;
    nr = std::min(nr, 8u);
    // Released whatever happens below (an error throws out of the loop).
    struct Release {
      hwloc_topology_t topo;
      hwloc_distances_s** found;
      unsigned nr;
      ~Release() {
        for (unsigned k = 0; k < nr; ++k) hwloc_distances_release(topo, found[k]);
      }
    } release{topo_, found, nr};
    for (unsigned k = 0; k < nr; ++k) {
      hwloc_distances_s* d = found[k];
      std::vector<int> nodes(d->nbobjs);
      for (unsigned i = 0; i < d->nbobjs; ++i) {
        auto it = gpuOfOsDev_.find(d->objs[i]);
        if (it == gpuOfOsDev_.end() || it->second < 0) {
          const std::string what = d->objs[i] && d->objs[i]->name ? d->objs[i]->name : "?";
          fail(weftInvalidArgument,
               "{}: the NVLinkBandwidth matrix names '{}', which is not an OS device of a GPU "
               "(expected the nvmlN or cudaN device of a PCI device of class 0302)",
               describe(source_), what);
        }
        nodes[i] = it->second;
      }
      for (unsigned i = 0; i < d->nbobjs; ++i) {
        gpus.push_back(nodes[i]);
        matrix.emplace_back(d->nbobjs);
        for (unsigned j = 0; j < d->nbobjs; ++j)
          matrix.back()[j] = static_cast<double>(d->values[i * d->nbobjs + j]) / 1000.0;
      }
      break;  // one matrix is the whole picture
    }
    if (gpus.empty() && source_.xmlFile.empty() && source_.synthetic.empty())
      nvmlNvLinks(g_, gpus, matrix);
    addLinks(gpus, matrix);
  }

  // Behind NVSwitches every GPU reaches every other in one hop at its fabric bandwidth (the
  // matrix gives it for every pair): one GPU-to-fabric link each. Otherwise one link per pair.
  void addLinks(const std::vector<int>& gpus, const std::vector<std::vector<double>>& m) {
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (nvswitch_ >= 0) {
        double fabric = 0;
        for (size_t j = 0; j < gpus.size(); ++j) fabric = std::max(fabric, m[i][j]);
        if (fabric > 0) g_.link(gpus[i], nvswitch_, LinkKind::NvLink, fabric, kNvLinkLatencyUs);
        continue;
      }
      for (size_t j = i + 1; j < gpus.size(); ++j) {
        const double bw = std::min(m[i][j], m[j][i]);
        if (bw > 0 && gpus[i] != gpus[j])
          g_.link(gpus[i], gpus[j], LinkKind::NvLink, bw, kNvLinkLatencyUs);
      }
    }
  }

  hwloc_topology_t topo_;
  const Source& source_;
  Graph g_;
  int host_ = 0, nvswitch_ = -1, nvswitchChips_ = 0;
  std::map<hwloc_obj_t, int> packages_, switches_;
  std::map<hwloc_obj_t, int> gpuOfOsDev_;  // GPU OS devices -> their GPU node
};

}  // namespace

Source sourceFromEnv() {
  Source s;
  const Env& e = env();
  if (!e.topoFile.empty())
    s.xmlFile = e.topoFile;
  else
    s.synthetic = e.topoSynthetic;
  return s;
}

Graph discover(const Source& source) {
  Topology topo = load(source);
  Graph g = Builder(topo.get(), source).build();
  WEFT_INFO(kSubsysTopo, "{}: {} packages, {} NUMA nodes, {} GPUs, {} NICs, {} NVLink links",
            describe(source), g.count(NodeKind::Package), g.count(NodeKind::Numa),
            g.count(NodeKind::Gpu), g.count(NodeKind::Nic), [&] {
              int n = 0;
              for (const Link& l : g.links) n += l.kind == LinkKind::NvLink;
              return n;
            }());
  return g;
}

int currentCpu() {
  // A process allowed on every CPU may run anywhere: its CPU of the moment says nothing.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (CPU_COUNT(&set) >= online) return -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

}  // namespace weft::topology
