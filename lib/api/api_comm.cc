// Communicator life cycle: unique ids, init (blocking, non-blocking, all ranks in one process,
// from the launcher's environment), finalize, destroy, abort, queries.
#include <cstdlib>
#include <vector>

#include "lib/api/handles.hpp"
#include "lib/base/env.hpp"
#include "lib/base/launch_env.hpp"
#include "lib/base/log.hpp"
#include "lib/bootstrap/root.hpp"
#include "lib/bootstrap/unique_id.hpp"
#include "lib/comm/comm.hpp"
#include "lib/enqueue/group.hpp"

using namespace weft;

namespace {

// Joins one rank and records the outcome in the handle (`function` names the API call in the
// message weftGetLastError returns).
void completeInit(weftComm* h, const weftUniqueId& id, const CommConfig& config,
                  const char* function) {
  weftResult_t result = weftInternalError;
  std::string why;
  try {
    auto comm = Comm::connect(id, h->nranks, h->rank, config, h->abortFlag);
    std::lock_guard lock(h->mutex);
    h->comm = std::move(comm);
    h->initState.store(weftSuccess, std::memory_order_release);
    return;
  } catch (const Error& e) {
    result = e.result();
    why = e.what();
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::lock_guard lock(h->mutex);
  h->initError = why;
  h->lastError = std::string(function) + ": " + why;
  h->initState.store(result, std::memory_order_release);
}

void checkRankArguments(weftComm_t* comm, int nranks, int rank) {
  if (comm == nullptr) fail(weftInvalidArgument, "comm (the output pointer) is NULL");
  if (nranks < 1) fail(weftInvalidArgument, "nranks={}: must be at least 1", nranks);
  if (rank < 0 || rank >= nranks)
    fail(weftInvalidArgument, "rank={}: must be in [0, nranks={})", rank, nranks);
  if (inGroup())
    fail(weftInvalidUsage,
         "communicators cannot be created inside weftGroupStart/weftGroupEnd; use one thread per "
         "rank, or weftCommInitAll");
}

// Creates the handle and joins, in this thread (blocking) or in a background one (returns
// weftInProgress). Throws on failure of a blocking init.
weftResult_t initRank(weftComm_t* out, int nranks, const weftUniqueId& id, int rank,
                      const CommConfig& config, const char* function) {
  (void)UniqueId::fromWire(id);  // a garbage id is the caller's error, reported now
  auto* h = new weftComm;
  h->rank = rank;
  h->nranks = nranks;
  if (!config.blocking) {
    h->initState.store(weftInProgress);
    api::registerComm(h);
    h->initThread =
        std::thread([h, id, config, function] { completeInit(h, id, config, function); });
    *out = h;
    return weftInProgress;
  }
  completeInit(h, id, config, function);
  const int state = h->initState.load();
  if (state != weftSuccess) {
    Error e(static_cast<weftResult_t>(state), h->initError);
    delete h;
    throw e;
  }
  api::registerComm(h);
  *out = h;
  return weftSuccess;
}

// Waits for a non-blocking init's thread, interrupting the init if it is still running.
void joinInit(weftComm* h) {
  if (h->initState.load(std::memory_order_acquire) == weftInProgress)
    h->abortFlag->store(true, std::memory_order_release);
  if (h->initThread.joinable()) h->initThread.join();
}

}  // namespace

extern "C" {

weftResult_t weftGetUniqueId(weftUniqueId* uniqueId) {
  return api::guard("weftGetUniqueId", nullptr, [&] {
    if (uniqueId == nullptr) fail(weftInvalidArgument, "uniqueId is NULL");
    RootOptions options;
    options.rounds = 1;
    options.lifetime = Deadline::afterMs(env().timeoutMs);
    std::unique_ptr<Root> root = startRoot(options);
    root->id().toWire(*uniqueId);
    root->detach();  // serves its one round, then ends
  });
}

weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId, int rank,
                                    weftConfig_t* config) {
  weftResult_t result = weftSuccess;
  const weftResult_t checked = api::guard("weftCommInitRankConfig", nullptr, [&] {
    checkRankArguments(comm, nranks, rank);
    result = initRank(comm, nranks, commId, rank, resolveConfig(config), "weftCommInitRankConfig");
  });
  return checked != weftSuccess ? checked : result;
}

weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank) {
  return weftCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

weftResult_t weftCommInitAll(weftComm_t* comms, int nranks, const int* devlist) {
  return api::guard("weftCommInitAll", nullptr, [&] {
    if (comms == nullptr) fail(weftInvalidArgument, "comms is NULL");
    if (nranks < 1) fail(weftInvalidArgument, "nranks={}: must be at least 1", nranks);
    if (devlist != nullptr)
      fail(weftInvalidArgument, "devlist must be NULL: host communicators have no devices");
    if (inGroup()) fail(weftInvalidUsage, "weftCommInitAll inside a group");
    const CommConfig config = resolveConfig(nullptr);
    weftUniqueId id;
    RootOptions options;
    options.lifetime = Deadline::afterMs(config.timeoutMs);
    std::unique_ptr<Root> root = startRoot(options);
    root->id().toWire(id);
    std::vector<weftComm*> handles(nranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) {
      handles[r] = new weftComm;
      handles[r]->rank = r;
      handles[r]->nranks = nranks;
      threads.emplace_back([&, r] { completeInit(handles[r], id, config, "weftCommInitAll"); });
    }
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < nranks; ++r) {
      if (handles[r]->initState.load() == weftSuccess) continue;
      // The message already names the rank.
      Error e(static_cast<weftResult_t>(handles[r]->initState.load()), handles[r]->initError);
      for (weftComm* h : handles) delete h;
      throw e;
    }
    for (int r = 0; r < nranks; ++r) {
      api::registerComm(handles[r]);
      comms[r] = handles[r];
    }
  });
}

weftResult_t weftCommInitFromEnv(weftComm_t* comm, weftConfig_t* config) {
  weftResult_t result = weftSuccess;
  const weftResult_t checked = api::guard("weftCommInitFromEnv", nullptr, [&] {
    const LaunchEnv launch = parseLaunchEnv([](const char* name) { return std::getenv(name); });
    if (!launch.uniqueIdHex || !launch.rank || !launch.nranks) {
      std::vector<std::string> found;
      if (launch.uniqueIdHex) found.push_back("WEFT_UNIQUE_ID");
      if (launch.rank) found.push_back(fmt::format("WEFT_RANK={}", *launch.rank));
      if (launch.nranks) found.push_back(fmt::format("WEFT_NRANKS={}", *launch.nranks));
      fail(weftInvalidUsage,
           "no launcher environment: weftCommInitFromEnv needs WEFT_UNIQUE_ID, WEFT_RANK and "
           "WEFT_NRANKS (set by weftrun); found: {}",
           found.empty() ? std::string("none of them") : fmt::format("{}", fmt::join(found, ", ")));
    }
    const weftUniqueId id = uniqueIdFromHex(*launch.uniqueIdHex);
    if (*launch.rank >= *launch.nranks)
      fail(weftInvalidUsage, "WEFT_RANK={} is not below WEFT_NRANKS={}", *launch.rank,
           *launch.nranks);
    checkRankArguments(comm, *launch.nranks, *launch.rank);
    result = initRank(comm, *launch.nranks, id, *launch.rank, resolveConfig(config),
                      "weftCommInitFromEnv");
  });
  return checked != weftSuccess ? checked : result;
}

weftResult_t weftCommFinalize(weftComm_t comm) {
  return api::guard("weftCommFinalize", comm, [&] {
    if (inGroup()) fail(weftInvalidUsage, "weftCommFinalize inside a group");
    api::readyComm(comm)->finalize();
  });
}

weftResult_t weftCommDestroy(weftComm_t comm) {
  return api::guard("weftCommDestroy", comm, [&] {
    if (inGroup()) fail(weftInvalidUsage, "weftCommDestroy inside a group");
    std::shared_ptr<weftComm> h = api::unregisterComm(comm);
    joinInit(h.get());
    std::shared_ptr<Comm> c = h->comm;
    h.reset();
    if (!c) return;
    // Destroy without finalize finalizes first (a barrier with every rank), unless the
    // communicator can no longer talk: then it only releases local resources.
    if (!c->finalized() && !c->aborted() && !c->failure()) c->finalize();
  });
}

weftResult_t weftCommAbort(weftComm_t comm) {
  return api::guard("weftCommAbort", comm, [&] {
    std::shared_ptr<weftComm> h = api::unregisterComm(comm);
    h->abortFlag->store(true, std::memory_order_release);
    std::shared_ptr<Comm> c;
    {
      std::lock_guard lock(h->mutex);
      c = h->comm;
    }
    if (c) c->abort();
    joinInit(h.get());
    if (!c) c = h->comm;  // an init that completed while being aborted
    if (c) c->abort();
    // Operations still queued on streams hold the communicator; they fail at once and the
    // last of them releases it.
  });
}

weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError) {
  return api::guard("weftCommGetAsyncError", comm, [&] {
    std::shared_ptr<weftComm> h = api::lookupComm(comm);
    if (asyncError == nullptr) fail(weftInvalidArgument, "asyncError is NULL");
    const int state = h->initState.load(std::memory_order_acquire);
    if (state != weftSuccess) {
      *asyncError = static_cast<weftResult_t>(state);
      if (state != weftInProgress && h->initThread.joinable()) h->initThread.join();
      return;
    }
    if (h->initThread.joinable()) h->initThread.join();
    std::shared_ptr<Comm> c;
    {
      std::lock_guard lock(h->mutex);
      c = h->comm;
    }
    const auto failure = c ? c->failure() : std::nullopt;
    *asyncError = failure ? failure->result() : weftSuccess;
  });
}

weftResult_t weftCommCount(const weftComm_t comm, int* count) {
  return api::guard("weftCommCount", comm, [&] {
    std::shared_ptr<weftComm> h = api::lookupComm(comm);
    if (count == nullptr) fail(weftInvalidArgument, "count is NULL");
    *count = h->nranks;
  });
}

weftResult_t weftCommUserRank(const weftComm_t comm, int* rank) {
  return api::guard("weftCommUserRank", comm, [&] {
    std::shared_ptr<weftComm> h = api::lookupComm(comm);
    if (rank == nullptr) fail(weftInvalidArgument, "rank is NULL");
    *rank = h->rank;
  });
}

}  // extern "C"
