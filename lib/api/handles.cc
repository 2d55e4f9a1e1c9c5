#include "lib/api/handles.hpp"

#include <new>
#include <unordered_map>

#include "lib/base/log.hpp"
#include "lib/comm/comm.hpp"

namespace weft::api {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<weftComm*, std::shared_ptr<weftComm>> comms;
  std::unordered_map<weftStream*, std::shared_ptr<weftStream>> streams;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: handles may outlive static teardown
  return *r;
}

std::string& threadLastError() {
  thread_local std::string message;
  return message;
}

}  // namespace

template <class Map>
typename Map::mapped_type find(Map& map, typename Map::key_type key) {
  std::lock_guard lock(registry().mutex);
  auto it = map.find(key);
  return it == map.end() ? nullptr : it->second;
}

template <class Map>
typename Map::mapped_type take(Map& map, typename Map::key_type key) {
  std::lock_guard lock(registry().mutex);
  auto it = map.find(key);
  if (it == map.end()) return nullptr;
  auto owned = std::move(it->second);
  map.erase(it);
  return owned;
}

void registerComm(weftComm* handle) {
  std::lock_guard lock(registry().mutex);
  registry().comms.emplace(handle, std::shared_ptr<weftComm>(handle));
}

std::shared_ptr<weftComm> unregisterComm(weftComm_t handle) {
  if (handle == nullptr) fail(weftInvalidArgument, "comm is NULL");
  auto owned = take(registry().comms, handle);
  if (!owned)
    fail(weftInvalidArgument, "comm={}: not a live communicator (destroyed, aborted or never "
         "created)", static_cast<void*>(handle));
  return owned;
}

std::shared_ptr<weftComm> lookupComm(weftComm_t handle, const char* argument) {
  if (handle == nullptr) fail(weftInvalidArgument, "{} is NULL", argument);
  auto owned = find(registry().comms, handle);
  if (!owned)
    fail(weftInvalidArgument, "{}={}: not a live communicator (destroyed, aborted or never created)",
         argument, static_cast<void*>(handle));
  return owned;
}

std::shared_ptr<Comm> readyComm(weftComm_t handle) {
  {
    // The usual case, under the registry's lock alone (it keeps the handle alive): h->comm is
    // written once, before the handle is registered (blocking init, split) or before initState
    // turns weftSuccess (release; non-blocking init), and never again, so once initState reads
    // weftSuccess it can be copied without the handle's lock.
    std::lock_guard lock(registry().mutex);
    auto it = registry().comms.find(handle);
    if (it != registry().comms.end()) {
      const weftComm& h = *it->second;
      if (h.initState.load(std::memory_order_acquire) == weftSuccess && h.comm) return h.comm;
    }
  }
  std::shared_ptr<weftComm> h = lookupComm(handle);
  std::lock_guard lock(h->mutex);
  const int state = h->initState.load(std::memory_order_acquire);
  if (state == weftInProgress)
    fail(weftInvalidUsage,
         "comm: rank {} is still initializing (non-blocking init): poll weftCommGetAsyncError "
         "until it returns weftSuccess",
         h->rank);
  if (state != weftSuccess || !h->comm)
    fail(static_cast<weftResult_t>(state == weftSuccess ? weftInternalError : state),
         "comm: rank {} failed to initialize: {}", h->rank, h->initError);
  return h->comm;
}

void registerStream(weftStream* handle) {
  std::lock_guard lock(registry().mutex);
  registry().streams.emplace(handle, std::shared_ptr<weftStream>(handle));
}

std::shared_ptr<weftStream> unregisterStream(weftStream_t handle) {
  if (handle == nullptr) fail(weftInvalidArgument, "stream is NULL");
  auto owned = take(registry().streams, handle);
  if (!owned)
    fail(weftInvalidArgument, "stream={}: not a live stream (destroyed or never created)",
         static_cast<void*>(handle));
  return owned;
}

std::shared_ptr<weftStream> lookupStream(weftStream_t handle) {
  if (handle == nullptr) return nullptr;
  auto owned = find(registry().streams, handle);
  if (!owned)
    fail(weftInvalidArgument, "stream={}: not a live stream (destroyed or never created)",
         static_cast<void*>(handle));
  return owned;
}

void setLastError(weftComm_t comm, const std::string& message) {
  threadLastError() = message;
  if (comm == nullptr) return;
  if (auto h = find(registry().comms, comm)) {
    std::lock_guard commLock(h->mutex);
    h->lastError = message;
  }
}

const char* lastError(weftComm_t comm) {
  if (comm != nullptr) {
    if (auto h = find(registry().comms, comm)) {
      std::lock_guard commLock(h->mutex);
      if (h->lastError.empty() && h->comm) {
        // An error of an operation that ran on a stream reaches the communicator only.
        if (auto f = h->comm->failure()) h->lastError = f->what();
      }
      // A copy for this thread, taken under the lock: the handle's own string can be rewritten
      // at any time by another thread's failure or by a non-blocking init that fails.
      thread_local std::string copy;
      copy = h->lastError;
      return copy.c_str();
    }
  }
  return threadLastError().c_str();
}

weftResult_t failed(const char* function, weftComm_t comm, std::exception_ptr error) {
  std::string message;
  weftResult_t result = weftSuccess;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    result = e.result();
    message = e.what();
  } catch (const std::bad_alloc&) {
    result = weftSystemError;
    message = "out of memory";
  } catch (const std::exception& e) {
    result = weftInternalError;
    message = e.what();
  } catch (...) {
    result = weftInternalError;
    message = "unknown exception";
  }
  if (result == weftSuccess || result == weftInProgress) return result;
  const std::string full = fmt::format("{}: {}", function, message);
  WEFT_INFO(kSubsysInit | kSubsysColl, "{} returned {}", full, resultName(result));
  setLastError(comm, full);
  return result;
}

}  // namespace weft::api
