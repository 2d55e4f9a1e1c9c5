#include "transports/shm/segment.hpp"

#include <fcntl.h>
#include <hwloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "lib/base/error.hpp"
#include "lib/base/log.hpp"

namespace weft {
namespace {

constexpr uint64_t kMagic = 0x746d67657366'6577ull;  // "wefsegmt"
constexpr uint32_t kVersion = 4;  // 2: RankControl::asleep; 3: InlineBlock; 4: 16 KiB in it

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t nlocal;
  uint64_t slotBytes;
  uint64_t mailboxBytes;
  uint64_t totalBytes;
};

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

std::vector<uint8_t> status(const std::string& error) {
  return std::vector<uint8_t>(error.begin(), error.end());
}

std::string errnoText(const char* call, const std::string& name) {
  return fmt::format("{}({}): {}", call, name, std::strerror(errno));
}

// Creates (leader) or opens the segment and maps it; returns the error text or "".
std::string mapSegment(bool create, const std::string& name, const SegmentGeometry& g,
                       uint8_t** base) {
  const int fd = shm_open(name.c_str(), create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
  if (fd < 0) return errnoText("shm_open", name);
  if (create) {
    // Reserve the pages now: a full /dev/shm fails here instead of raising SIGBUS later.
    if (ftruncate(fd, static_cast<off_t>(g.totalBytes)) != 0) {
      const std::string e = errnoText("ftruncate", name);
      close(fd);
      shm_unlink(name.c_str());
      return e;
    }
    if (const int err = posix_fallocate(fd, 0, static_cast<off_t>(g.totalBytes)); err != 0) {
      close(fd);
      shm_unlink(name.c_str());
      return fmt::format("posix_fallocate({}, {} bytes): {} (is /dev/shm large enough?)", name,
                         g.totalBytes, std::strerror(err));
    }
  }
  void* p = mmap(nullptr, g.totalBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mapErrno = errno;
  close(fd);
  if (p == MAP_FAILED) {
    errno = mapErrno;
    if (create) shm_unlink(name.c_str());
    return errnoText("mmap", name);
  }
  *base = static_cast<uint8_t*>(p);
  auto* header = reinterpret_cast<Header*>(p);
  if (create) {
    new (p) Header{kMagic, kVersion, static_cast<uint32_t>(g.nlocal), g.slotBytes,
                   g.mailboxBytes, g.totalBytes};
    for (int i = 0; i < ShmSegment::kHostFlags; ++i) new (*base + 64 * (1 + i)) SharedFlag();
    for (int r = 0; r < g.nlocal; ++r) new (*base + g.controlOffset + r * sizeof(RankControl)) RankControl();
  } else if (header->magic != kMagic || header->version != kVersion) {
    munmap(p, g.totalBytes);
    return fmt::format("{} is not a weft segment of this version", name);
  } else if (header->nlocal != static_cast<uint32_t>(g.nlocal) ||
             header->totalBytes != g.totalBytes) {
    const std::string e = fmt::format(
        "{} was made for {} local ranks with slots of {} bytes and mailboxes of {} ({} bytes in "
        "all); this rank expected {}, {} and {} ({} bytes): WEFT_SHM_SLOT_BYTES must be the same "
        "on every rank of a host",
        name, header->nlocal, header->slotBytes, header->mailboxBytes, header->totalBytes, g.nlocal,
        g.slotBytes, g.mailboxBytes, g.totalBytes);
    munmap(p, g.totalBytes);
    return e;
  }
  return "";
}

}  // namespace

SegmentGeometry SegmentGeometry::make(int nlocal, uint64_t slotBytes, uint64_t mailboxBytes) {
  SegmentGeometry g;
  g.nlocal = nlocal;
  g.slotBytes = roundUp(slotBytes, 4096);
  g.mailboxBytes = roundUp(mailboxBytes, 4096);
  g.controlOffset = 4096;
  g.slotsOffset = roundUp(g.controlOffset + nlocal * sizeof(RankControl), 4096);
  g.mailboxesOffset = g.slotsOffset + uint64_t(nlocal) * 2 * g.slotBytes;
  g.totalBytes = g.mailboxesOffset + uint64_t(nlocal) * nlocal * g.mailboxBytes;
  return g;
}

std::unique_ptr<ShmSegment> ShmSegment::create(OutOfBand& oob, const LocalGroup& group,
                                               const std::string& baseName,
                                               const SegmentGeometry& g, Deadline deadline) {
  const bool leader = group.me == 0;
  const int leaderRank = group.ranks.front();
  const std::string name = fmt::format("/weft-{}-{}", baseName, leaderRank);
  uint8_t* base = nullptr;
  auto unmapOnError = [&] {
    if (base) munmap(base, g.totalBytes);
  };
  // Step 1: the leader creates; step 2: the others map; step 3: the leader unlinks.
  std::string error = leader ? mapSegment(true, name, g, &base) : "";
  std::vector<std::vector<uint8_t>> all = oob.allGather(status(error), deadline);
  const std::string leaderError(all[leaderRank].begin(), all[leaderRank].end());
  if (!leaderError.empty()) {
    unmapOnError();
    fail(weftSystemError, "rank {}: rank {} could not create the shared-memory segment: {}",
         oob.rank(), leaderRank, leaderError);
  }
  if (!leader) error = mapSegment(false, name, g, &base);
  all = oob.allGather(status(error), deadline);
  if (leader) shm_unlink(name.c_str());
  for (int local = 0; local < group.size(); ++local) {
    const int r = group.ranks[local];
    if (all[r].empty()) continue;
    unmapOnError();
    fail(weftSystemError, "rank {}: rank {} could not map the shared-memory segment: {}",
         oob.rank(), r, std::string(all[r].begin(), all[r].end()));
  }
  WEFT_INFO(kSubsysShm, "rank {}: shared-memory segment {} ({} bytes, {} local ranks, slots of {})",
            oob.rank(), name, g.totalBytes, g.nlocal, g.slotBytes);
  return std::unique_ptr<ShmSegment>(new ShmSegment(base, g, name));
}

ShmSegment::~ShmSegment() { munmap(base_, geometry_.totalBytes); }

SharedFlag& ShmSegment::hostFlag(int index) const {
  // In the header page, after the header's own line.
  return *reinterpret_cast<SharedFlag*>(base_ + 64 * (1 + index));
}

RankControl& ShmSegment::control(int local) const {
  return *reinterpret_cast<RankControl*>(base_ + geometry_.controlOffset +
                                         local * sizeof(RankControl));
}

uint8_t* ShmSegment::slot(int local, int which) const {
  return base_ + geometry_.slotsOffset + (uint64_t(local) * 2 + which) * geometry_.slotBytes;
}

uint8_t* ShmSegment::mailbox(int from, int to) const {
  return base_ + geometry_.mailboxesOffset +
         (uint64_t(from) * geometry_.nlocal + to) * geometry_.mailboxBytes;
}

uint64_t defaultSlotBytes(int nlocal, bool oversubscribed) {
  static const uint64_t l2 = [] {
    uint64_t bytes = 0;
    hwloc_topology_t topology;
    if (hwloc_topology_init(&topology) == 0) {
      if (hwloc_topology_load(topology) == 0) {
        hwloc_obj_t cache = hwloc_get_obj_by_type(topology, HWLOC_OBJ_L2CACHE, 0);
        if (cache && cache->attr) bytes = cache->attr->cache.size;
      }
      hwloc_topology_destroy(topology);
    }
    return bytes ? bytes : uint64_t{1} << 20;
  }();
  const uint64_t ranks = static_cast<uint64_t>(std::max(nlocal, 1));
  const uint64_t cacheSized = std::clamp<uint64_t>(2 * l2 / ranks, 32 << 10, 1 << 20);
  if (!oversubscribed) return cacheSized;
  return std::clamp<uint64_t>((8 << 20) / (2 * ranks), cacheSized, 1 << 20);
}

}  // namespace weft
