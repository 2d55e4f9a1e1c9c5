#include "transports/shm/memory.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/base/error.hpp"

namespace weft {
namespace {

long pageSize() {
  static const long size = sysconf(_SC_PAGESIZE);
  return size;
}

}  // namespace

SharedRegions& SharedRegions::instance() {
  static SharedRegions* regions = new SharedRegions();  // lives as long as the process
  return *regions;
}

void* SharedRegions::allocate(uint64_t bytes) {
  const uint64_t size = (bytes + pageSize() - 1) / pageSize() * pageSize();
  const int fd = static_cast<int>(syscall(SYS_memfd_create, "weft-memory", 0));
  if (fd < 0) failErrno(errno, "weftMemAlloc: memfd_create");
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    close(fd);
    failErrno(err, fmt::format("weftMemAlloc: ftruncate to {} bytes", size));
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    close(fd);
    failErrno(err, fmt::format("weftMemAlloc: mmap of {} bytes", size));
  }
  std::lock_guard lock(mutex_);
  regions_[reinterpret_cast<uintptr_t>(p)] = {nextId_++, size, fd};
  return p;
}

void SharedRegions::release(void* base) {
  Region region;
  {
    std::lock_guard lock(mutex_);
    auto it = regions_.find(reinterpret_cast<uintptr_t>(base));
    if (it == regions_.end())
      fail(weftInvalidArgument, "ptr={}: not memory returned by weftMemAlloc (or freed twice)",
           base);
    region = it->second;
    if (region.registrations > 0)
      fail(weftInvalidUsage,
           "ptr={}: still registered with a communicator ({} registration(s)); call "
           "weftCommDeregister first",
           base, region.registrations);
    regions_.erase(it);
  }
  munmap(base, region.bytes);
  close(region.fd);
}

void SharedRegions::addRegistration(const void* ptr, uint64_t bytes) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(mutex_);
  auto it = regions_.upper_bound(p);
  if (it == regions_.begin() || p + bytes > std::prev(it)->first + std::prev(it)->second.bytes)
    fail(weftInvalidArgument,
         "buff={} size={}: not inside memory from weftMemAlloc (only that memory can be mapped "
         "by the other ranks; other host memory is reached with CMA without registering)",
         ptr, bytes);
  ++std::prev(it)->second.registrations;
}

void SharedRegions::removeRegistration(const void* ptr) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(mutex_);
  auto it = regions_.upper_bound(p);
  if (it == regions_.begin() || std::prev(it)->second.registrations == 0)
    fail(weftInternalError, "registration of {} not found", ptr);
  --std::prev(it)->second.registrations;
}

std::optional<RegionRef> SharedRegions::find(const void* ptr, uint64_t bytes) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(mutex_);
  auto it = regions_.upper_bound(p);
  if (it == regions_.begin()) return std::nullopt;
  --it;
  const Region& r = it->second;
  if (p + bytes > it->first + r.bytes) return std::nullopt;
  return RegionRef{r.id, r.bytes, p - it->first, r.fd};
}

PeerMappings::~PeerMappings() {
  for (auto& [key, m] : mappings_) munmap(m.base, m.bytes);
}

uint8_t* PeerMappings::map(pid_t pid, const RegionRef& ref) {
  const auto key = std::make_pair(pid, ref.id);
  if (auto it = mappings_.find(key); it != mappings_.end()) {
    it->second.lastUse = ++uses_;
    return it->second.base + ref.offset;
  }
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return nullptr;
  const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, ref.fd, 0));
  close(pidfd);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, ref.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return nullptr;
  if (mappings_.size() >= kCapacity) {
    auto oldest = mappings_.begin();
    for (auto it = mappings_.begin(); it != mappings_.end(); ++it)
      if (it->second.lastUse < oldest->second.lastUse) oldest = it;
    munmap(oldest->second.base, oldest->second.bytes);
    mappings_.erase(oldest);
  }
  mappings_[key] = {static_cast<uint8_t*>(p), ref.bytes, ++uses_};
  return static_cast<uint8_t*>(p) + ref.offset;
}

}  // namespace weft
