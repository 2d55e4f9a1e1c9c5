/* A stand-in for libnvidia-ml.so.1 with the eight entry points lib/topology/nvml.cc loads, for
 * the unit test nvml_test.cc on machines without a GPU. It describes the GPUs of
 * tests/fixtures/pcie-8gpu.xml (PCI buses 02-05 and 42-45) plus one device outside that
 * picture, with NVLinks chosen to exercise every branch of the reader:
 *   - NVML's device order differs from the PCI order: index 0 is bus 03, index 1 bus 02;
 *   - 02 <-> 03: two active NVLink 2 links (25 GB/s each);
 *   - 04 <-> 05: one active NVLink 1 link (20 GB/s), and link 1 of each pointing at 02 but
 *     inactive;
 *   - 42, 43, 44, 45: six active links each to bus 90, which is no GPU: an NVSwitch. All six
 *     report NVLink 5.0 (nvmlNvlinkVersion_t 7); 42 and 43 are Blackwells (50 GB/s per link),
 *     44 and 45 Hoppers, which report 5.0 for NVLink 4 (25 GB/s per link);
 *   - index 8, bus 81: a GPU hwloc does not show (hidden by a cgroup), linked to 02.
 * Links past a device's last one answer NVML_ERROR_INVALID_ARGUMENT, as NVML does. The
 * structure layout is nvmlPciInfo_t as of NVML's _v3 calls; versions are nvmlNvlinkVersion_t
 * (1 = 1.0, 2 = 2.0, ..., 7 = 5.0) and architectures nvmlDeviceArchitecture_t (5 Volta,
 * 9 Hopper, 10 Blackwell). */
#include <stdint.h>
#include <string.h>

enum { kSuccess = 0, kInvalidArgument = 2, kLinks = 18, kDevices = 9 };

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} PciInfo;

typedef struct {
  int active;
  unsigned version;
  unsigned remoteBus;
} Link;

typedef struct {
  unsigned bus;
  unsigned arch;
  int nlinks;
  Link links[kLinks];
} Device;

static const Device kDevice[kDevices] = {
    {0x03, 5, 2, {{1, 2, 0x02}, {1, 2, 0x02}}},
    {0x02, 5, 3, {{1, 2, 0x03}, {1, 2, 0x03}, {1, 2, 0x81}}},
    {0x04, 5, 2, {{1, 1, 0x05}, {0, 1, 0x02}}},
    {0x05, 5, 2, {{1, 1, 0x04}, {0, 1, 0x02}}},
    {0x42, 10, 6, {{1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}}},
    {0x43, 10, 6, {{1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}}},
    {0x44, 9, 6, {{1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}}},
    {0x45, 9, 6, {{1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}, {1, 7, 0x90}}},
    {0x81, 5, 1, {{1, 2, 0x02}}},
};

typedef struct Handle* Device_t;

static const Device* deviceOf(Device_t d) {
  const uintptr_t i = (uintptr_t)d;
  return i >= 1 && i <= kDevices ? &kDevice[i - 1] : 0;
}

static void fill(PciInfo* info, unsigned bus) {
  memset(info, 0, sizeof *info);
  info->bus = bus;
}

int nvmlInit_v2(void) { return kSuccess; }
int nvmlShutdown(void) { return kSuccess; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = kDevices;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, Device_t* device) {
  if (index >= kDevices) return kInvalidArgument;
  *device = (Device_t)(uintptr_t)(index + 1);
  return kSuccess;
}

int nvmlDeviceGetPciInfo_v3(Device_t device, PciInfo* info) {
  const Device* d = deviceOf(device);
  if (!d) return kInvalidArgument;
  fill(info, d->bus);
  return kSuccess;
}

static const Link* linkOf(Device_t device, unsigned link) {
  const Device* d = deviceOf(device);
  return d && link < (unsigned)d->nlinks ? &d->links[link] : 0;
}

int nvmlDeviceGetNvLinkState(Device_t device, unsigned link, int* active) {
  const Link* l = linkOf(device, link);
  if (!l) return kInvalidArgument;
  *active = l->active;
  return kSuccess;
}

int nvmlDeviceGetNvLinkVersion(Device_t device, unsigned link, unsigned* version) {
  const Link* l = linkOf(device, link);
  if (!l) return kInvalidArgument;
  *version = l->version;
  return kSuccess;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(Device_t device, unsigned link, PciInfo* info) {
  const Link* l = linkOf(device, link);
  if (!l) return kInvalidArgument;
  fill(info, l->remoteBus);
  return kSuccess;
}

int nvmlDeviceGetArchitecture(Device_t device, unsigned* arch) {
  const Device* d = deviceOf(device);
  if (!d) return kInvalidArgument;
  *arch = d->arch;
  return kSuccess;
}
