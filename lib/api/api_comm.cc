// Communicator life cycle: unique ids, init (blocking, non-blocking, all ranks in one process,
// from the launcher's environment), finalize, destroy, abort, queries.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include "lib/api/clique.hpp"
#include "lib/api/handles.hpp"
#include "lib/base/env.hpp"
#include "lib/base/launch_env.hpp"
#include "lib/base/log.hpp"
#include "lib/bootstrap/pmix.hpp"
#include "lib/bootstrap/root.hpp"
#include "lib/bootstrap/store.hpp"
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
// weftInProgress). Throws on failure of a blocking init. `keepAlive` (may be null) is released
// once the join has finished (weftCommInitFromEnv's store must serve until then).
weftResult_t initRank(weftComm_t* out, int nranks, const weftUniqueId& id, int rank,
                      const CommConfig& config, const char* function,
                      std::shared_ptr<void> keepAlive = nullptr) {
  (void)UniqueId::fromWire(id);  // a garbage id is the caller's error, reported now
  auto* h = new weftComm;
  h->rank = rank;
  h->nranks = nranks;
  if (!config.blocking) {
    h->initState.store(weftInProgress);
    api::registerComm(h);
    h->initThread = std::thread([h, id, config, function, keepAlive]() mutable {
      completeInit(h, id, config, function);
      keepAlive.reset();
    });
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

// ---- weftCommInitFromEnv: the unique id from the launcher ----------------------------------

// Each launch warning once per process, however many communicators it creates.
void warnOnce(const std::string& warning) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(warning).second) WEFT_WARN(kSubsysInit, "weftCommInitFromEnv: {}", warning);
}

struct EnvRendezvous {
  weftUniqueId id;
  int nranks = 0;
  std::shared_ptr<StoreServer> store;  // rank 0 of a store rendezvous: serves until init ends
};

// A fresh id whose root serves one round (as weftGetUniqueId).
weftUniqueId freshUniqueId(int64_t timeoutMs) {
  RootOptions options;
  options.rounds = 1;
  options.lifetime = Deadline::afterMs(timeoutMs);
  std::unique_ptr<Root> root = startRoot(options);
  weftUniqueId id;
  root->id().toWire(id);
  root->detach();
  return id;
}

std::span<const uint8_t> idBytes(const weftUniqueId& id) {
  return std::span(reinterpret_cast<const uint8_t*>(id.internal), sizeof id.internal);
}

weftUniqueId idFromBytes(const std::vector<uint8_t>& bytes, std::string_view from) {
  weftUniqueId id;
  if (bytes.size() != sizeof id.internal)
    fail(weftRemoteError, "the unique id from {} has {} bytes, expected {}", from, bytes.size(),
         sizeof id.internal);
  std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  return id;
}

// Every communicator a process creates from the environment gets its own key: all ranks call
// weftCommInitFromEnv equally often, so the n-th calls meet under the n-th key.
std::string nextEnvKey(const char* prefix) {
  static std::atomic<int> sequence{0};
  return fmt::format("{}{}", prefix, sequence.fetch_add(1));
}

EnvRendezvous rendezvousThroughPmix(const LaunchEnv& launch, int64_t timeoutMs) {
  const PmixJob job = pmixJob();
  if (job.rank != launch.rank)
    fail(weftInvalidUsage, "{} says rank {} but the PMIx server says rank {} (found: {})",
         launcherName(launch.launcher), launch.rank, job.rank, launch.evidence);
  if (launch.nranks && *launch.nranks != job.size)
    fail(weftInvalidUsage,
         "{} says {} ranks but the PMIx job (namespace {}) has {} processes (found: {})",
         launcherName(launch.launcher), *launch.nranks, job.nspace, job.size, launch.evidence);
  EnvRendezvous out;
  out.nranks = job.size;
  weftUniqueId mine{};
  if (launch.rank == 0) mine = freshUniqueId(timeoutMs);
  out.id = idFromBytes(pmixBroadcast(nextEnvKey("weft.unique_id."), idBytes(mine), 0, timeoutMs),
                       "PMIx");
  return out;
}

EnvRendezvous rendezvousThroughStore(const LaunchEnv& launch, int64_t timeoutMs) {
  const int nranks = *launch.nranks;
  std::string secretText;
  if (launch.secret) {
    secretText = *launch.secret;
  } else if (launch.secretFile) {
    std::string warning;
    secretText = readSecretFile(*launch.secretFile, warning);
    if (!warning.empty()) warnOnce(warning);
  } else {
    // Public values (warned about by parseLaunchEnv): at least ranks of other jobs on other
    // ports or sizes are told apart.
    secretText = fmt::format("weft public store key|{}|{}|{}", launch.storeHost, launch.storePort,
                             nranks);
  }
  const Secret secret = storeSecret(secretText);
  const std::string key = nextEnvKey("weft/unique_id/");
  EnvRendezvous out;
  out.nranks = nranks;
  if (launch.rank == 0) {
    out.id = freshUniqueId(timeoutMs);
    out.store = StoreServer::start(launch.storePort, secret, Deadline::afterMs(timeoutMs));
    const std::span<const uint8_t> bytes = idBytes(out.id);
    out.store->set(key, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    return out;
  }
  out.id = idFromBytes(storeGet(launch.storeHost, launch.storePort, secret, launch.rank, key,
                                Deadline::afterMs(timeoutMs), nullptr),
                       "weft's store");
  return out;
}

EnvRendezvous rendezvousFromEnv(const LaunchEnv& launch, int64_t timeoutMs) {
  for (const std::string& warning : launch.warnings) warnOnce(warning);
  WEFT_INFO(kSubsysInit, "weftCommInitFromEnv: launched by {} as rank {}{}; unique id through {} "
            "(found: {})",
            launcherName(launch.launcher), launch.rank,
            launch.nranks ? fmt::format(" of {}", *launch.nranks) : std::string(),
            rendezvousName(launch.rendezvous), launch.evidence);
  switch (launch.rendezvous) {
    case Rendezvous::kUniqueId: {
      EnvRendezvous out;
      out.id = uniqueIdFromHex(launch.uniqueIdHex);
      out.nranks = *launch.nranks;
      return out;
    }
    case Rendezvous::kPmix: return rendezvousThroughPmix(launch, timeoutMs);
    case Rendezvous::kStore: return rendezvousThroughStore(launch, timeoutMs);
  }
  fail(weftInternalError, "unknown rendezvous");
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
    auto clique = std::make_shared<api::Clique>(nranks);
    for (int r = 0; r < nranks; ++r) {
      handles[r]->clique = clique;
      api::registerComm(handles[r]);
      comms[r] = handles[r];
    }
  });
}

weftResult_t weftCommInitFromEnv(weftComm_t* comm, weftConfig_t* config) {
  weftResult_t result = weftSuccess;
  const weftResult_t checked = api::guard("weftCommInitFromEnv", nullptr, [&] {
    const LaunchEnv launch = parseLaunchEnv([](const char* name) { return std::getenv(name); });
    const CommConfig resolved = resolveConfig(config);
    EnvRendezvous rendezvous = rendezvousFromEnv(launch, resolved.timeoutMs);
    checkRankArguments(comm, rendezvous.nranks, launch.rank);
    result = initRank(comm, rendezvous.nranks, rendezvous.id, launch.rank, resolved,
                      "weftCommInitFromEnv", std::move(rendezvous.store));
  });
  return checked != weftSuccess ? checked : result;
}

weftResult_t weftCommFinalize(weftComm_t comm) {
  return api::guard("weftCommFinalize", comm, [&] {
    if (inGroup()) fail(weftInvalidUsage, "weftCommFinalize inside a group");
    std::shared_ptr<Comm> c = api::readyComm(comm);
    std::shared_ptr<api::Clique> clique = api::lookupComm(comm)->clique;
    if (!clique) return c->finalize();
    c->finalizeLocally(c->deadline());
    clique->leave(c->rank(), c);
  });
}

weftResult_t weftCommDestroy(weftComm_t comm) {
  return api::guard("weftCommDestroy", comm, [&] {
    if (inGroup()) fail(weftInvalidUsage, "weftCommDestroy inside a group");
    std::shared_ptr<weftComm> h = api::unregisterComm(comm);
    joinInit(h.get());
    std::shared_ptr<Comm> c = h->comm;
    const std::shared_ptr<api::Clique> clique = h->clique;
    const int rank = h->rank;
    h.reset();
    // Destroy without finalize finalizes first (a barrier with every rank; in an InitAll
    // clique, this rank's own operations), unless the communicator can no longer talk: then it
    // only releases local resources.
    const bool finalize = c && !c->finalized() && !c->aborted() && !c->failure();
    if (!clique) {
      if (finalize) c->finalize();
      return;
    }
    try {
      if (finalize) c->finalizeLocally(c->deadline());
    } catch (...) {
      clique->leave(rank, c);  // the handle is gone: the clique must not wait for it
      throw;
    }
    clique->leave(rank, c);
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
    if (h->clique) h->clique->leave(h->rank, c);
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
