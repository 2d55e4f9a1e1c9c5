#include "lib/topology/nvml.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>
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

  bool open() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    return sym(init, "nvmlInit_v2") && sym(shutdown, "nvmlShutdown") &&
           sym(count, "nvmlDeviceGetCount_v2") && sym(handle, "nvmlDeviceGetHandleByIndex_v2") &&
           sym(pci, "nvmlDeviceGetPciInfo_v3") && sym(linkState, "nvmlDeviceGetNvLinkState") &&
           sym(linkVersion, "nvmlDeviceGetNvLinkVersion") &&
           sym(remotePci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
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

// Per direction, per link: NVLink 1 (P100) 20 GB/s; 2, 3 and 4 (V100, A100, H100) 25 GB/s.
double linkGBps(unsigned version) {
  return version <= 1 ? 20 : 25;
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
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t d = nullptr;
    nvmlPciInfo_t info{};
    if (nvml.handle(i, &d) != kNvmlSuccess || nvml.pci(d, &info) != kNvmlSuccess) continue;
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
    for (unsigned link = 0; link < kMaxLinks; ++link) {
      int active = 0;
      unsigned version = 0;
      nvmlPciInfo_t remote{};
      if (nvml.linkState(devices[i], link, &active) != kNvmlSuccess || !active) continue;
      if (nvml.linkVersion(devices[i], link, &version) != kNvmlSuccess) version = 2;
      if (nvml.remotePci(devices[i], link, &remote) != kNvmlSuccess) continue;
      auto it = gpuByBus.find(busKey(remote.domain, remote.bus, remote.device));
      size_t j = gpus.size();
      if (it != gpuByBus.end())
        for (j = 0; j < gpus.size() && gpus[j] != it->second; ++j) {
        }
      if (j < gpus.size())
        matrix[i][j] += linkGBps(version);
      else
        toSwitch += linkGBps(version);  // an NVSwitch (or a GPU outside this picture)
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
