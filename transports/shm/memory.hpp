// Host memory that every rank of a host can map: weftMemAlloc hands out memfd-backed regions,
// and peers map them (pidfd_getfd of the owner's descriptor, then mmap) to read them in place:
// collectives on such buffers need no staging copy and no CMA.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

namespace weft {

// Where a buffer lies inside a shareable region: what a peer needs to map it.
struct RegionRef {
  uint64_t id = 0;      // unique within the owning process, never reused
  uint64_t bytes = 0;   // the whole region
  uint64_t offset = 0;  // of the buffer within the region
  int32_t fd = -1;      // the owner's descriptor of the region
};

// The process's shareable regions.
class SharedRegions {
 public:
  static SharedRegions& instance();

  // A fresh region of at least `bytes` (page-granular), zero-filled. Throws weftSystemError.
  void* allocate(uint64_t bytes);
  // `base` must be what allocate returned. Throws weftInvalidArgument otherwise, and
  // weftInvalidUsage while the region is registered with a communicator.
  void release(void* base);
  // Registration (weftCommRegister): [ptr, ptr + bytes) must lie in one region, which may not
  // be released until as many unregister calls. Throw weftInvalidArgument otherwise.
  void addRegistration(const void* ptr, uint64_t bytes);
  void removeRegistration(const void* ptr);
  // The region holding [ptr, ptr + bytes), if any.
  std::optional<RegionRef> find(const void* ptr, uint64_t bytes) const;

 private:
  struct Region {
    uint64_t id, bytes;
    int fd;
    int registrations = 0;
  };
  mutable std::mutex mutex_;
  std::map<uintptr_t, Region> regions_;  // by base address
  uint64_t nextId_ = 1;
};

// One rank's mappings of its peers' regions, cached; unmapped on destruction.
class PeerMappings {
 public:
  PeerMappings() = default;
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;
  ~PeerMappings();

  // The local address of peer `pid`'s region `ref` (plus ref.offset), mapping it on first use.
  // nullptr when the kernel refuses (pidfd_getfd needs the same rights as ptrace).
  uint8_t* map(pid_t pid, const RegionRef& ref);
  // Keeps at most this many mappings (least recently mapped go first).
  static constexpr size_t kCapacity = 64;

 private:
  struct Mapping {
    uint8_t* base;
    uint64_t bytes;
    uint64_t lastUse;
  };
  std::map<std::pair<pid_t, uint64_t>, Mapping> mappings_;
  uint64_t uses_ = 0;
};

}  // namespace weft
