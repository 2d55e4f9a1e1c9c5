// Shareable memory (weftMemAlloc) and buffer registration.
#include <mutex>
#include <unordered_map>

#include "lib/api/handles.hpp"
#include "transports/shm/memory.hpp"

using namespace weft;

namespace {

struct Registration {
  weftComm_t comm;
  void* buff;
};

// Handles handed out by weftCommRegister, so a stale or foreign handle is an error.
struct Registrations {
  std::mutex mutex;
  std::unordered_map<Registration*, std::unique_ptr<Registration>> live;
};

Registrations& registrations() {
  static Registrations* r = new Registrations();
  return *r;
}

}  // namespace

extern "C" {

weftResult_t weftMemAlloc(void** ptr, size_t size) {
  return api::guard("weftMemAlloc", nullptr, [&] {
    if (ptr == nullptr) fail(weftInvalidArgument, "ptr (the output pointer) is NULL");
    if (size == 0) fail(weftInvalidArgument, "size=0: nothing to allocate");
    *ptr = SharedRegions::instance().allocate(size);
  });
}

weftResult_t weftMemFree(void* ptr) {
  return api::guard("weftMemFree", nullptr, [&] {
    if (ptr == nullptr) fail(weftInvalidArgument, "ptr is NULL");
    SharedRegions::instance().release(ptr);
  });
}

weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size, void** handle) {
  return api::guard("weftCommRegister", comm, [&] {
    api::lookupComm(comm);
    if (buff == nullptr) fail(weftInvalidArgument, "buff is NULL");
    if (size == 0) fail(weftInvalidArgument, "size=0: nothing to register");
    if (handle == nullptr) fail(weftInvalidArgument, "handle (the output pointer) is NULL");
    SharedRegions::instance().addRegistration(buff, size);
    auto record = std::make_unique<Registration>(Registration{comm, buff});
    Registration* key = record.get();
    std::lock_guard lock(registrations().mutex);
    registrations().live.emplace(key, std::move(record));
    *handle = key;
  });
}

weftResult_t weftCommDeregister(const weftComm_t comm, void* handle) {
  return api::guard("weftCommDeregister", comm, [&] {
    api::lookupComm(comm);
    std::unique_ptr<Registration> record;
    {
      std::lock_guard lock(registrations().mutex);
      auto it = registrations().live.find(static_cast<Registration*>(handle));
      if (it == registrations().live.end() || it->second->comm != comm)
        fail(weftInvalidArgument,
             "handle={}: not a registration of this communicator (deregistered twice?)", handle);
      record = std::move(it->second);
      registrations().live.erase(it);
    }
    SharedRegions::instance().removeRegistration(record->buff);
  });
}

}  // extern "C"
