#include "transports/ucx/peer_info.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "lib/base/error.hpp"

namespace weft::ucx {
namespace {

constexpr uint32_t kMagic = 0x58435557;  // "WUCX" read as little-endian bytes

// Native byte order: UCX itself requires the ranks of one job to share an architecture.
struct WireHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t headerBytes;
  int32_t rank;
  int32_t nranks;
  int32_t pid;
  uint32_t addressBytes;
  uint32_t flags;  // PeerInfo::kFlag*
  uint32_t reserved;
  char bootId[40];
  uint64_t pidNamespace;
  uint64_t ipcNamespace;
};
static_assert(sizeof(WireHeader) == 88, "the wire header has no padding");

uint64_t namespaceInode(const char* path) {
  struct stat st {};
  if (stat(path, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

}  // namespace

HostIdentity localHostIdentity() {
  HostIdentity id;
  if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    if (std::fgets(id.bootId.data(), static_cast<int>(id.bootId.size()), f) == nullptr) {
      id.bootId[0] = 0;
    }
    std::fclose(f);
    id.bootId[std::strcspn(id.bootId.data(), "\n")] = 0;
  }
  id.pidNamespace = namespaceInode("/proc/self/ns/pid");
  id.ipcNamespace = namespaceInode("/proc/self/ns/ipc");
  return id;
}

std::vector<uint8_t> encodePeerInfo(const PeerInfo& info) {
  WireHeader h{};
  h.magic = kMagic;
  h.version = kPeerInfoVersion;
  h.headerBytes = sizeof(WireHeader);
  h.rank = info.rank;
  h.nranks = info.nranks;
  h.pid = info.pid;
  h.addressBytes = static_cast<uint32_t>(info.workerAddress.size());
  h.flags = info.flags;
  std::memcpy(h.bootId, info.host.bootId.data(), sizeof h.bootId);
  h.bootId[sizeof h.bootId - 1] = 0;
  h.pidNamespace = info.host.pidNamespace;
  h.ipcNamespace = info.host.ipcNamespace;

  std::vector<uint8_t> blob(sizeof h + info.workerAddress.size());
  std::memcpy(blob.data(), &h, sizeof h);
  if (!info.workerAddress.empty()) {
    std::memcpy(blob.data() + sizeof h, info.workerAddress.data(), info.workerAddress.size());
  }
  return blob;
}

PeerInfo decodePeerInfo(std::span<const uint8_t> blob, int localRank, int fromRank, int nranks) {
  WireHeader h{};
  if (blob.size() < sizeof h) {
    fail(weftInternalError,
         "rank {}: UCX address from rank {} has {} bytes, less than its {}-byte header", localRank,
         fromRank, blob.size(), sizeof h);
  }
  std::memcpy(&h, blob.data(), sizeof h);
  if (h.magic != kMagic) {
    fail(weftInternalError, "rank {}: UCX address from rank {} does not start with weft's magic",
         localRank, fromRank);
  }
  if (h.version != kPeerInfoVersion || h.headerBytes != sizeof h) {
    fail(weftInvalidUsage,
         "rank {}: rank {} speaks UCX address version {} ({}-byte header), this rank version {}: "
         "mixed weft versions in one communicator",
         localRank, fromRank, h.version, h.headerBytes, kPeerInfoVersion);
  }
  if (h.rank != fromRank || h.nranks != nranks) {
    fail(weftInternalError,
         "rank {}: UCX address in slot {} claims rank {} of {}, expected rank {} of {}", localRank,
         fromRank, h.rank, h.nranks, fromRank, nranks);
  }
  if (h.addressBytes == 0 || h.addressBytes != blob.size() - sizeof h) {
    fail(weftInternalError,
         "rank {}: UCX address from rank {} declares {} address bytes, carries {}", localRank,
         fromRank, h.addressBytes, blob.size() - sizeof h);
  }

  PeerInfo info;
  info.rank = h.rank;
  info.nranks = h.nranks;
  info.pid = h.pid;
  info.flags = h.flags;
  h.bootId[sizeof h.bootId - 1] = 0;
  std::memcpy(info.host.bootId.data(), h.bootId, sizeof h.bootId);
  info.host.pidNamespace = h.pidNamespace;
  info.host.ipcNamespace = h.ipcNamespace;
  info.workerAddress.assign(blob.begin() + sizeof h, blob.end());
  return info;
}

}  // namespace weft::ucx
