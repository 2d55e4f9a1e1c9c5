#include "lib/api/handles.hpp"

#include <new>
#include <unordered_set>

#include "lib/base/log.hpp"
#include "lib/comm/comm.hpp"

namespace weft::api {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_set<weftComm*> comms;
  std::unordered_set<weftStream*> streams;
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

void registerComm(weftComm* handle) {
  std::lock_guard lock(registry().mutex);
  registry().comms.insert(handle);
}

bool unregisterComm(weftComm* handle) {
  std::lock_guard lock(registry().mutex);
  return registry().comms.erase(handle) > 0;
}

weftComm* lookupComm(weftComm_t handle, const char* argument) {
  if (handle == nullptr) fail(weftInvalidArgument, "{} is NULL", argument);
  std::lock_guard lock(registry().mutex);
  if (!registry().comms.count(handle))
    fail(weftInvalidArgument, "{}={}: not a live communicator (destroyed, aborted or never created)",
         argument, static_cast<void*>(handle));
  return handle;
}

std::shared_ptr<Comm> readyComm(weftComm_t handle) {
  weftComm* h = lookupComm(handle);
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
  registry().streams.insert(handle);
}

bool unregisterStream(weftStream* handle) {
  std::lock_guard lock(registry().mutex);
  return registry().streams.erase(handle) > 0;
}

weftStream* lookupStream(weftStream_t handle) {
  if (handle == nullptr) return nullptr;
  std::lock_guard lock(registry().mutex);
  if (!registry().streams.count(handle))
    fail(weftInvalidArgument, "stream={}: not a live stream (destroyed or never created)",
         static_cast<void*>(handle));
  return handle;
}

void setLastError(weftComm_t comm, const std::string& message) {
  threadLastError() = message;
  if (comm == nullptr) return;
  std::lock_guard lock(registry().mutex);
  if (!registry().comms.count(comm)) return;
  std::lock_guard commLock(comm->mutex);
  comm->lastError = message;
}

const char* lastError(weftComm_t comm) {
  if (comm != nullptr) {
    std::lock_guard lock(registry().mutex);
    if (registry().comms.count(comm)) {
      std::lock_guard commLock(comm->mutex);
      if (comm->lastError.empty() && comm->comm) {
        // An error of an operation that ran on a stream reaches the communicator only.
        if (auto f = comm->comm->failure()) comm->lastError = f->what();
      }
      return comm->lastError.c_str();
    }
  }
  return threadLastError().c_str();
}

weftResult_t guard(const char* function, weftComm_t comm, const std::function<void()>& body) {
  std::string message;
  weftResult_t result = weftSuccess;
  try {
    body();
    return weftSuccess;
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
