// What one rank tells every other rank at set-up (through OutOfBand::allGather): a versioned
// header, where it runs (host identity, pid) and its UCP worker address. The transport decides
// per peer, from these alone, whether the peer shares its host (shared memory without UCX error
// handling, watched by pid) or not (UCX peer error handling); both sides decide alike.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace weft::ucx {

// Ranks whose identities compare equal can use UCX's shared-memory transports (sysv, posix,
// cma) and can watch each other's processes by pid: same kernel boot, same pid and IPC
// namespaces. An unknown identity (no /proc) never equals another.
struct HostIdentity {
  std::array<char, 40> bootId{};  // /proc/sys/kernel/random/boot_id, NUL-terminated
  uint64_t pidNamespace = 0;      // inode of /proc/self/ns/pid
  uint64_t ipcNamespace = 0;      // inode of /proc/self/ns/ipc

  bool known() const { return bootId[0] != 0 && pidNamespace != 0 && ipcNamespace != 0; }
  bool operator==(const HostIdentity&) const = default;
};

HostIdentity localHostIdentity();

inline bool sameHost(const HostIdentity& a, const HostIdentity& b) {
  return a.known() && a == b;
}

struct PeerInfo {
  // Options that must agree across the communicator (both ends of a pair decide alike).
  static constexpr uint32_t kFlagPeerErrorHandlingOnHost = 1u << 0;

  int rank = -1;
  int nranks = 0;
  pid_t pid = 0;
  uint32_t flags = 0;
  HostIdentity host;
  std::vector<uint8_t> workerAddress;
};

inline constexpr uint16_t kPeerInfoVersion = 1;

std::vector<uint8_t> encodePeerInfo(const PeerInfo& info);

// Validates the header before using anything in it; throws weft::Error naming `localRank` and
// the sender (`fromRank`) when the blob is short, foreign, of another version or inconsistent.
PeerInfo decodePeerInfo(std::span<const uint8_t> blob, int localRank, int fromRank, int nranks);

}  // namespace weft::ucx
