#include "lib/topology/nvml.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>

#include "lib/base/log.hpp"

namespace weft::topology {
namespace {

// The few NVML declarations used (nvml.h is not needed to build weft).
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr int kNvmlSuccess = 0;
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (H100)

struct Nvml {
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  int (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  int (*linkState)(nvmlDevice_t, unsigned, int*) = nullptr;
  int (*linkVersion)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  int (*remotePci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  int (*architecture)(nvmlDevice_t, unsigned*) = nullptr;  // optional (NVML 11.2+)

  bool open() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    if (!(sym(init, "nvmlInit_v2") && sym(shutdown, "nvmlShutdown") &&
          sym(count, "nvmlDeviceGetCount_v2") && sym(handle, "nvmlDeviceGetHandleByIndex_v2") &&
          sym(pci, "nvmlDeviceGetPciInfo_v3") && sym(linkState, "nvmlDeviceGetNvLinkState") &&
          sym(linkVersion, "nvmlDeviceGetNvLinkVersion") &&
          sym(remotePci, "nvmlDeviceGetNvLinkRemotePciInfo_v2")))
      return false;
    architecture = reinterpret_cast<decltype(architecture)>(dlsym(lib, "nvmlDeviceGetArchitecture"));
    return true;
  }
  template <class F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    if (!f) WEFT_INFO(kSubsysTopo, "NVML: {} not found, NVLink not read", name);
    return f != nullptr;
  }
  ~Nvml() {
    if (lib) dlclose(lib);
  }
};

std::string busKey(unsigned domain, unsigned bus, unsigned device) {
  return fmt::format("{:04x}:{:02x}:{:02x}", domain, bus, device);
}

// nvmlDeviceGetNvLinkVersion answers nvmlNvlinkVersion_t, not the NVLink generation:
// 1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0.
constexpr unsigned kNvLink5 = 7;
constexpr unsigned kArchHopper = 9;  // nvmlDeviceArchitecture_t

// Per direction, per link: NVLink 1.0 (P100) 20 GB/s; 2.x, 3.x and 4.0 (V100, A100, H100)
// 25 GB/s; 5.0 (B200) 50 GB/s. Hopper GPUs have been seen to report 5.0 for their NVLink 4
// links, so 5.0 counts as 50 GB/s only on a GPU known not to be a Hopper.
double linkGBps(unsigned version, unsigned arch) {
  if (version <= 1) return 20;
  if (version >= kNvLink5 && arch != 0 && arch != kArchHopper) return 50;
  return 25;
}

}  // namespace

void nvmlNvLinks(Graph& graph, std::vector<int>& gpus, std::vector<std::vector<double>>& matrix) {
  gpus.clear();
  matrix.clear();
  Nvml nvml;
  if (!nvml.open()) {
    WEFT_INFO(kSubsysTopo, "NVML not loaded ({}): no NVLink in the picture",
              nvml.lib ? "symbols missing" : "libnvidia-ml.so.1 absent");
    return;
  }
  if (nvml.init() != kNvmlSuccess) {
    WEFT_INFO(kSubsysTopo, "nvmlInit failed: no NVLink in the picture");
    return;
  }
  std::map<std::string, int> gpuByBus;  // "dddd:bb:dd" -> GPU node
  for (int g : graph.nodesOf(NodeKind::Gpu))
    if (graph.nodes[g].busId.size() >= 10) gpuByBus[graph.nodes[g].busId.substr(0, 10)] = g;
  unsigned n = 0;
  if (nvml.count(&n) != kNvmlSuccess) n = 0;
  std::vector<nvmlDevice_t> devices;
  std::set<std::string> nvmlGpus;  // every GPU NVML sees, also those outside hwloc's picture
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t d = nullptr;
    nvmlPciInfo_t info{};
    if (nvml.handle(i, &d) != kNvmlSuccess || nvml.pci(d, &info) != kNvmlSuccess) continue;
    nvmlGpus.insert(busKey(info.domain, info.bus, info.device));
    auto it = gpuByBus.find(busKey(info.domain, info.bus, info.device));
    if (it == gpuByBus.end()) continue;  // not in hwloc's picture (hidden by a cgroup)
    gpus.push_back(it->second);
    devices.push_back(d);
  }
  matrix.assign(gpus.size(), std::vector<double>(gpus.size(), 0));
  const std::vector<int> existing = graph.nodesOf(NodeKind::NvSwitch);
  int fabric = existing.empty() ? -1 : existing.front();
  for (size_t i = 0; i < gpus.size(); ++i) {
    double toSwitch = 0;
    unsigned arch = 0;  // unknown
    if (nvml.architecture && nvml.architecture(devices[i], &arch) != kNvmlSuccess) arch = 0;
    for (unsigned link = 0; link < kMaxLinks; ++link) {
      int active = 0;
      unsigned version = 0;
      nvmlPciInfo_t remote{};
      if (nvml.linkState(devices[i], link, &active) != kNvmlSuccess || !active) continue;
      if (nvml.linkVersion(devices[i], link, &version) != kNvmlSuccess) version = 2;
      if (nvml.remotePci(devices[i], link, &remote) != kNvmlSuccess) continue;
      const std::string far = busKey(remote.domain, remote.bus, remote.device);
      auto it = gpuByBus.find(far);
      size_t j = gpus.size();
      if (it != gpuByBus.end())
        for (j = 0; j < gpus.size() && gpus[j] != it->second; ++j) {
        }
      if (j < gpus.size())
        matrix[i][j] += linkGBps(version, arch);
      else if (!nvmlGpus.count(far))
        toSwitch += linkGBps(version, arch);  // not a GPU: an NVSwitch
      // (else a GPU this process does not see: no path through it)
    }
    if (toSwitch > 0) {
      if (fabric < 0)
        fabric = graph.add({NodeKind::NvSwitch,
                            graph.nodes[gpus[i]].host,
                            graph.nodesOf(NodeKind::Host).front(),
                            0,
                            "NVSwitch fabric",
                            "",
                            {}});
      graph.link(gpus[i], fabric, LinkKind::NvLink, toSwitch, kNvLinkLatencyUs);
    }
  }
  nvml.shutdown();
  WEFT_INFO(kSubsysTopo, "NVML: {} GPUs matched{}", gpus.size(),
            fabric >= 0 ? ", behind NVSwitches" : "");
}

}  // namespace weft::topology
