// The C boundary: what weftComm_t and weftStream_t point to, the registries that tell a live
// handle from a destroyed one, and the guard every API function runs its body in (it turns
// every internal failure into a weftResult_t and a message for weftGetLastError, and never lets
// an exception cross into C).
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "include/weft.h"
#include "lib/base/error.hpp"
#include "lib/stream/host_stream.hpp"

namespace weft {
class Comm;
namespace api {
class Clique;
}
}  // namespace weft

struct weftComm {
  int rank = 0;
  int nranks = 0;
  std::shared_ptr<weft::Comm> comm;  // set when initialization has completed
  // Shared with the communicator: set by weftCommAbort, even while a non-blocking init runs.
  std::shared_ptr<std::atomic<bool>> abortFlag = std::make_shared<std::atomic<bool>>(false);
  std::atomic<int> initState{weftSuccess};  // weftInProgress while a non-blocking init runs
  std::thread initThread;
  std::mutex mutex;  // guards comm, initError, lastError
  std::string initError;
  std::string lastError;
  // Set for the communicators of one weftCommInitAll (finalized and destroyed together).
  std::shared_ptr<weft::api::Clique> clique;
};

struct weftStream {
  weft::HostStream impl;
};

namespace weft::api {

// The registry owns the handles: a call that looked one up keeps it alive (through the shared
// pointer) even if another thread destroys or aborts the communicator meanwhile.
void registerComm(weftComm* handle);
// Removes the handle from the registry and returns it; throws weftInvalidArgument if it was
// not there (destroyed twice, or never created).
std::shared_ptr<weftComm> unregisterComm(weftComm_t handle);
// Throws weftInvalidArgument when `handle` is null or not a live communicator.
std::shared_ptr<weftComm> lookupComm(weftComm_t handle, const char* argument = "comm");
// The initialised communicator behind a live handle; throws when initialization is still in
// progress or failed.
std::shared_ptr<Comm> readyComm(weftComm_t handle);

void registerStream(weftStream* handle);
std::shared_ptr<weftStream> unregisterStream(weftStream_t handle);
// Null is allowed (it means "no stream"); anything else must be a live stream.
std::shared_ptr<weftStream> lookupStream(weftStream_t handle);

// The result and message of a failed API call (`error`, thrown by its body): "function:
// message" goes to weftGetLastError of this thread and of `comm` (may be null or dead).
weftResult_t failed(const char* function, weftComm_t comm, std::exception_ptr error);

// Runs `body`, converting failures. A template, not a std::function: a collective's body
// captures more than std::function holds without allocating, and every call would pay for it.
template <class Body>
weftResult_t guard(const char* function, weftComm_t comm, Body&& body) {
  try {
    body();
    return weftSuccess;
  } catch (...) {
    return failed(function, comm, std::current_exception());
  }
}

// The thread's last error message, and a communicator's.
void setLastError(weftComm_t comm, const std::string& message);
const char* lastError(weftComm_t comm);

}  // namespace weft::api
