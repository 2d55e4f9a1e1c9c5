// Set-up (UCP context, worker, address exchange, endpoints) and teardown of a rank's UCX worker,
// and the contexts that communicators hold on it.
#include "transports/ucx/ucx_transport.hpp"

#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

#include "lib/base/error.hpp"
#include "lib/base/log.hpp"
#include "transports/ucx/peer_info.hpp"
#include "transports/ucx/tag_layout.hpp"
#include "transports/ucx/ucx_transport_impl.hpp"

namespace weft {
namespace ucx {
namespace {

void checkStatus(ucs_status_t status, int rank, const char* what) {
  if (status != UCS_OK)
    fail(weftSystemError, "rank {}: {} failed: {}", rank, what, ucs_status_string(status));
}

// What `print` writes to a FILE*, as a string ("" when no stream can be opened).
template <typename Print>
std::string printed(Print print) {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (f == nullptr) return {};
  print(f);
  std::fclose(f);
  std::string out(text, size);
  std::free(text);
  return out;
}

// The transports UCX chose for an endpoint ("sysv/memory, cma/memory"), from ucp_ep_print_info;
// only computed for log lines and tests.
std::string endpointLanes(ucp_ep_h ep) {
  const std::string all = printed([&](FILE* f) { ucp_ep_print_info(ep, f); });
  std::string lanes;
  for (size_t at = all.find("lane["); at != std::string::npos; at = all.find("lane[", at + 1)) {
    size_t colon = all.find(':', all.find(':', at) + 1);  // "lane[0]:  3:sysv/memory.0 ..."
    size_t end = all.find_first_of(" \n", colon);
    if (colon == std::string::npos || end == std::string::npos) break;
    if (!lanes.empty()) lanes += ", ";
    lanes += all.substr(colon + 1, end - colon - 1);
  }
  return lanes.empty() ? "?" : lanes;
}

}  // namespace

bool sharedMemoryLanes(std::string_view lanes) {
  // UCX names every shared-memory transport's device "memory": sysv, posix, cma, xpmem, knem
  // and self.
  return lanes.find("/memory") != std::string::npos;
}

bool sharedMemoryResources(std::string_view resources) {
  for (const char* shm : {"sysv/", "posix/", "xpmem/"})
    if (resources.find(shm) != std::string_view::npos) return true;
  return false;
}

std::string UcxWorker::resources() {
  std::lock_guard lock(mutex_);
  std::string names;
  std::string all = printed([&](FILE* f) { ucp_context_print_info(context_, f); });
  // "#      resource 3  :  md 2  dev 3  flags -- sysv/memory"
  for (size_t at = all.find("resource"); at != std::string::npos;
       at = all.find("resource", at + 1)) {
    const size_t dashes = all.find("-- ", at), end = all.find('\n', at);
    if (dashes == std::string::npos || dashes > end) continue;
    if (!names.empty()) names += ", ";
    names += all.substr(dashes + 3, end - dashes - 3);
  }
  return names;
}

std::string UcxWorker::lanesTo(int peer) {
  std::lock_guard lock(mutex_);
  if (peer < 0 || peer >= nranks_ || !peers_[peer].connected()) return {};
  return endpointLanes(peers_[peer].eps[0]);
}

int UcxWorker::channelsTo(int peer) {
  std::lock_guard lock(mutex_);
  if (peer < 0 || peer >= nranks_ || !peers_[peer].connected()) return 0;
  return peers_[peer].channels;
}

void UcxWorker::setUp(OutOfBand& oob) {
  rank_ = oob.rank();
  nranks_ = oob.nranks();
  if (nranks_ < 1 || nranks_ > kMaxRanks || rank_ < 0 || rank_ >= nranks_) {
    fail(weftInvalidUsage,
         "rank {}: the UCX transport supports 1..{} ranks (the UCP tag has {} rank bits), got {} "
         "ranks",
         rank_, kMaxRanks, kRankBits, nranks_);
  }
  rankBits_ = rankBitsFor(nranks_);

  if (options_.channels < 1 || options_.channels > kMaxChannels) {
    fail(weftInvalidUsage, "rank {}: the UCX transport takes 1..{} channels per peer, got {}",
         rank_, kMaxChannels, options_.channels);
  }
  std::vector<char> wanted(static_cast<size_t>(nranks_), options_.peers.empty());
  for (int r : options_.peers) {
    if (r < 0 || r >= nranks_)
      fail(weftInvalidUsage, "rank {}: UCX transport asked to connect to rank {} of {}", rank_, r,
           nranks_);
    wanted[r] = 1;
  }

  ucp_config_t* config = nullptr;
  checkStatus(ucp_config_read(nullptr, nullptr, &config), rank_, "ucp_config_read");
  if (options_.networkOnly && std::getenv("UCX_TLS") == nullptr) {
    ucs_status_t modified = ucp_config_modify(config, "TLS", "^sm");
    if (modified != UCS_OK) ucp_config_release(config);
    checkStatus(modified, rank_, "ucp_config_modify(TLS=^sm)");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                      UCP_PARAM_FIELD_REQUEST_INIT | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
  // WAKEUP: a rank with nothing to do sleeps on the worker's event fd (waitForActivity).
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.request_size = sizeof(PendingOp);
  params.request_init = resetRequest;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<size_t>(nranks_);
  params.name = options_.label.c_str();
  ucs_status_t status = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  checkStatus(status, rank_, "ucp_init");

  // SERIALIZED: one thread at a time, not always the same one (the communicator serialises).
  ucp_worker_params_t workerParams{};
  workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_NAME;
  workerParams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  workerParams.name = options_.label.c_str();
  checkStatus(ucp_worker_create(context_, &workerParams, &worker_), rank_, "ucp_worker_create");

  if (ucp_worker_get_efd(worker_, &eventFd_) != UCS_OK) {
    eventFd_ = -1;
    WEFT_INFO(kSubsysNet, "ucx[{}] rank {}: no UCX wake-up fd; idle ranks yield and nap instead",
              options_.label, rank_);
  }

  // A context without a shared-memory transport for messages (UCX_TLS leaving out sysv, posix
  // and xpmem; cma and knem only copy rendezvous data) reaches the ranks of this host over the
  // network too: they are treated as peers on other hosts are (UCX error handling, no flush at
  // the end of an operation, several channels).
  overNetwork_ = options_.networkOnly || !sharedMemoryResources(resources());

  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  checkStatus(ucp_worker_query(worker_, &attr), rank_, "ucp_worker_query");
  if (attr.thread_mode == UCS_THREAD_MODE_SINGLE) {
    WEFT_INFO(kSubsysNet, "ucx[{}] rank {}: UCX granted thread mode SINGLE, not SERIALIZED",
              options_.label, rank_);
  }
  PeerInfo me;
  me.rank = rank_;
  me.nranks = nranks_;
  me.pid = getpid();
  me.flags = options_.peerErrorHandlingOnHost ? PeerInfo::kFlagPeerErrorHandlingOnHost : 0;
  me.host = localHostIdentity();
  const auto* address = reinterpret_cast<const uint8_t*>(attr.address);
  me.workerAddress.assign(address, address + attr.address_length);
  ucp_worker_release_address(worker_, attr.address);

  std::vector<std::vector<uint8_t>> blobs =
      oob.allGather(encodePeerInfo(me), options_.setupDeadline);
  if (blobs.size() != static_cast<size_t>(nranks_)) {
    fail(weftInternalError, "rank {}: UCX address exchange returned {} addresses for {} ranks",
         rank_, blobs.size(), nranks_);
  }

  peers_ = std::make_unique<Peer[]>(static_cast<size_t>(nranks_));
  failedQueue_.reserve(static_cast<size_t>(nranks_));
  touched_.reserve(static_cast<size_t>(nranks_));
  flushing_.reserve(static_cast<size_t>(nranks_));
  exited_.reserve(static_cast<size_t>(nranks_));
  int connected = 0, endpoints = 0, onHost = 0, watched = 0, handled = 0;
  for (int r = 0; r < nranks_; ++r) {
    PeerInfo info = decodePeerInfo(blobs[r], rank_, r, nranks_);
    if (info.flags != me.flags) {
      fail(weftInvalidUsage,
           "rank {}: rank {} created its UCX transport with peerErrorHandlingOnHost={}, this rank "
           "with {}: every rank must pass the same value",
           rank_, r, (info.flags & PeerInfo::kFlagPeerErrorHandlingOnHost) != 0,
           options_.peerErrorHandlingOnHost);
    }
    Peer& p = peers_[r];
    p.owner = this;
    p.rank = r;
    p.pid = info.pid;
    p.sameHost = r == rank_ || sameHost(me.host, info.host);
    if (!wanted[r]) continue;  // no endpoint: refusePost fails what is posted to it
    ++connected;
    // Self never fails on its own; a peer in this process shares our fate.
    bool sameProcess = p.sameHost && info.pid == me.pid;
    p.ucxErrorHandling = !p.sameHost ||
                         ((overNetwork_ || options_.peerErrorHandlingOnHost) && r != rank_) ||
                         (!sameProcess && !ProcessWatch::supported());

    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(info.workerAddress.data());
    ep.err_mode = p.ucxErrorHandling ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    if (p.ucxErrorHandling) {
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_handler.cb = onPeerError;
      ep.err_handler.arg = &p;
    }
    // Channels only for peers over network transports: shared memory is not one flow.
    p.channels = r != rank_ && p.ucxErrorHandling ? options_.channels : 1;
    for (int c = 0; c < p.channels; ++c) {
      status = ucp_ep_create(worker_, &ep, &p.eps[c]);
      if (status != UCS_OK) {
        fail(weftSystemError,
             "rank {}: connecting to rank {} ({}, error handling {}, channel {} of {}) failed: {}",
             rank_, r, p.sameHost ? "same host" : "other host",
             p.ucxErrorHandling ? "peer" : "none", c, p.channels, ucs_status_string(status));
      }
    }
    // A peer on another host must not be reached through shared memory: network namespaces on
    // one kernel share a boot id, so UCX takes them for one machine and would use sysv, posix
    // or cma between them, which no real pair of hosts can. UCX 1.13 grants the peer error
    // handling these endpoints ask for only on network transports; a UCX that did otherwise
    // (or a UCX_TLS without any network transport) is refused here, not run over fake links.
    if (!p.sameHost) {
      const std::string lanes = endpointLanes(p.eps[0]);
      if (sharedMemoryLanes(lanes)) {
        fail(weftSystemError,
             "rank {}: UCX connects to rank {} on another host through shared memory ({}); "
             "give UCX a network transport for other hosts (UCX_TLS with tcp, rc, ud or dc)",
             rank_, r, lanes);
      }
    }
    if (!p.ucxErrorHandling && !sameProcess) {
      p.watched = watch_.add(r, info.pid);
      if (!p.watched) {
        WEFT_WARN(kSubsysNet,
                  "ucx[{}] rank {}: cannot watch rank {} (pid {}): its failure will only show as "
                  "timeouts",
                  options_.label, rank_, r, info.pid);
      }
    }
    endpoints += p.channels;
    onHost += p.sameHost && r != rank_;
    watched += p.watched;
    handled += p.ucxErrorHandling;
  }

  WEFT_INFO(kSubsysNet,
            "ucx[{}] rank {}/{}: connected to {} rank(s){} with {} endpoints ({} channel(s) per "
            "network peer), {} of them on this host ({} watched by pid), {} with UCX peer error "
            "handling{}",
            options_.label, rank_, nranks_, connected,
            overNetwork_ ? " over network transports only" : "", endpoints, options_.channels,
            onHost, watched, handled,
            onHost > 0 && !options_.peerErrorHandlingOnHost && !overNetwork_
                ? "; same-host peers use shared memory without UCX error handling (UCX 1.13 has "
                  "none for sysv/posix/cma)"
                : "");
  if (logEnabled(LogLevel::Info, kSubsysNet)) {
    // One line per kind of peer: which transports UCX picked for it.
    bool shown[2][2] = {};
    for (int r = 0; r < nranks_; ++r) {
      const Peer& p = peers_[r];
      if (r == rank_ || !p.connected() || shown[p.sameHost][p.ucxErrorHandling]) continue;
      shown[p.sameHost][p.ucxErrorHandling] = true;
      WEFT_INFO(kSubsysNet, "ucx[{}] rank {} -> rank {} ({}, error handling {}): {}",
                options_.label, rank_, r, p.sameHost ? "same host" : "other host",
                p.ucxErrorHandling ? "peer" : "none", endpointLanes(p.eps[0]));
    }
  }
}

void UcxWorker::attach(Context& c) {
  std::lock_guard lock(mutex_);
  contexts_.push_back(&c);
}

uint32_t UcxWorker::nextContext() {
  std::lock_guard lock(mutex_);
  return nextContext_;
}

uint32_t UcxWorker::maxContext() const {
  return maxContextFor(rankBits_);
}

void UcxWorker::useContextsUpTo(uint32_t id) {
  std::lock_guard lock(mutex_);
  nextContext_ = std::max(nextContext_, id + 1);
}

bool UcxWorker::connectedTo(int peer) {
  std::lock_guard lock(mutex_);
  return peer >= 0 && peer < nranks_ && peers_[peer].connected() && !peers_[peer].failed;
}

// A context closes; the worker goes with the last one. Until then the endpoints stay, since
// the other communicators still use them.
void UcxWorker::closeContext(Context& c, Deadline deadline, bool force) noexcept {
  std::lock_guard lock(mutex_);
  if (c.closed) return;
  c.closed = true;
  std::erase(contexts_, &c);
  if (contexts_.empty()) {
    shutDown(deadline, force);
    return;
  }
  withdraw(c, force ? deadline.earlier(Deadline::afterMs(kDrainMs)) : deadline);
}

// Finishes the requests of one context while the others carry on: receives are cancelled,
// sends get until the deadline to complete; what UCX still holds then is abandoned (freed
// without a callback) and reported cancelled.
void UcxWorker::cancelPending(const Context* only) {
  for (int r = 0; peers_ && r < nranks_; ++r) {
    for (PendingOp *op = peers_[r].pending, *next = nullptr; op != nullptr; op = next) {
      next = op->next;
      if (only != nullptr && op->desc.context != only) continue;
      op->cancelRequested = true;
      if (op->desc.isRecv) ucp_request_cancel(worker_, op);
    }
  }
}

void UcxWorker::withdraw(Context& c, Deadline deadline) {
  try {
    if (c.pending > 0) {
      WEFT_WARN(kSubsysNet,
                "ucx[{}] rank {}: context {} closes with {} requests outstanding; "
                "cancelling them",
                options_.label, rank_, c.id, c.pending.load());
    }
    cancelPending(&c);
    while (c.pending > 0 && !deadline.expired()) {
      if (!progressLocked()) std::this_thread::yield();
    }
    for (int r = 0; peers_ && r < nranks_; ++r) {
      for (PendingOp *op = peers_[r].pending, *next = nullptr; op != nullptr; op = next) {
        next = op->next;
        if (op->desc.context != &c) continue;
        detach(op, Request::kCancelled,
               fmt::format("rank {}: {} cancelled: its communicator closed", c.rank,
                           describe(op->desc)));
      }
    }
  } catch (...) {
    // Formatting may throw bad_alloc; nothing here must escape a close.
  }
}

// Lets UCX finish what it started on its own, wire-up replies included, then flushes every
// endpoint. UCX 1.13 aborts on an assertion when ucp_worker_destroy has to purge a wire-up reply
// still queued on a tcp endpoint (fixed upstream by openucx/ucx#8175); a transport destroyed
// right after its first messages hits it. Progressing until the worker has been idle for a
// while (about 2 ms; tcp connection events arrive from UCX's async thread) avoids it.
void UcxWorker::quiesce(Deadline deadline) {
  constexpr int kIdleCalls = 100;
  constexpr auto kIdleTime = std::chrono::milliseconds(2);
  int idleCalls = 0;
  Clock::time_point idleSince = Clock::now();
  while (!deadline.expired()) {
    if (ucp_worker_progress(worker_) != 0) {
      idleCalls = 0;
      idleSince = Clock::now();
      continue;
    }
    if (++idleCalls >= kIdleCalls && Clock::now() - idleSince >= kIdleTime) break;
    std::this_thread::yield();
  }
  ucp_request_param_t param{};
  ucs_status_ptr_t sp = ucp_worker_flush_nbx(worker_, &param);
  if (!UCS_PTR_IS_PTR(sp)) return;
  while (ucp_request_check_status(sp) == UCS_INPROGRESS && !deadline.expired()) {
    if (ucp_worker_progress(worker_) == 0) std::this_thread::yield();
  }
  ucp_request_free(sp);
}

// close() (force = false) flushes every endpoint; the destructor without close (force = true)
// drops them. Both finish outstanding requests, destroy the worker and the context, and do not
// throw.
void UcxWorker::shutDown(Deadline deadline, bool force) noexcept {
  if (closed_ || worker_ == nullptr) {
    if (context_ != nullptr) ucp_cleanup(context_);
    context_ = nullptr;
    closed_ = true;
    return;
  }
  try {
    closing_ = true;
    const size_t outstanding = pendingOps_;
    if (outstanding > 0 && !force) {
      WEFT_WARN(kSubsysNet, "ucx[{}] rank {}: close with {} requests outstanding; cancelling them",
                options_.label, rank_, outstanding);
    }
    // A workaround, not a guarantee: never worth more than kDrainMs (requests stuck on a dead
    // peer keep UCX busy for ever).
    quiesce(deadline.earlier(Deadline::afterMs(kDrainMs)));
    cancelPending(nullptr);
    std::vector<void*> flushing, forced;
    for (int r = 0; peers_ && r < nranks_; ++r) {
      Peer& p = peers_[r];
      for (void*& c : p.closeRequests) {
        if (c != nullptr) forced.push_back(c);
        c = nullptr;
      }
      const bool forceThis = force || p.failed;
      for (ucp_ep_h& e : p.eps) {
        if (e == nullptr) continue;
        void* closing = closeEndpoint(e, forceThis);
        e = nullptr;
        if (closing != nullptr) (forceThis ? forced : flushing).push_back(closing);
      }
    }
    drainingPeers_ = 0;
    // Progress until every endpoint is closed and UCX has handed back every request. Flushing
    // the live endpoints may take until the deadline; what concerns failed peers gets at most
    // kDrainMs more (UCX 1.13 never completes some of it).
    auto inProgress = [](const std::vector<void*>& requests) {
      size_t n = 0;
      for (void* c : requests) n += ucp_request_check_status(c) == UCS_INPROGRESS;
      return n;
    };
    size_t flushLeft = flushing.size(), forcedLeft = forced.size(), pending = outstanding;
    Deadline drain = deadline;
    bool flushed = false;
    while (!deadline.expired()) {
      if (ucp_worker_progress(worker_) == 0) std::this_thread::yield();
      flushLeft = inProgress(flushing);
      forcedLeft = inProgress(forced);
      pending = pendingOps_;
      if (flushLeft + forcedLeft + pending == 0) break;
      if (flushLeft > 0) continue;
      if (!flushed) {
        flushed = true;
        drain = deadline.earlier(Deadline::afterMs(kDrainMs));
      }
      if (drain.expired()) break;
    }
    if (flushLeft > 0) {
      WEFT_WARN(kSubsysNet,
                "ucx[{}] rank {}: {} endpoints not flushed by the deadline; destroying the worker",
                options_.label, rank_, flushLeft);
    } else if (forcedLeft + pending > 0) {
      WEFT_INFO(kSubsysNet,
                "ucx[{}] rank {}: UCX kept {} endpoint closes and {} requests of failed peers; "
                "destroying the worker",
                options_.label, rank_, forcedLeft, pending);
    }
    for (void* c : flushing) ucp_request_free(c);
    for (void* c : forced) ucp_request_free(c);
    for (const EndpointFlush& f : flushing_) ucp_request_free(f.request);
    flushing_.clear();
    for (int r = 0; peers_ && r < nranks_; ++r) {
      detachAll(peers_[r], Request::kCancelled, "transport closed");
    }
    WEFT_TRACE(kSubsysNet, "ucx[{}] rank {}: closing the worker", options_.label, rank_);
  } catch (...) {
    // Formatting may throw bad_alloc; the teardown below must still run.
  }
  watch_.clear();
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
  ucp_cleanup(context_);
  context_ = nullptr;
  closed_ = true;
}

}  // namespace ucx

std::unique_ptr<Transport> createUcxTransport(OutOfBand& oob, const UcxTransportOptions& options) {
  auto worker = std::make_shared<ucx::UcxWorker>(options);
  worker->setUp(oob);  // on failure the destructor releases what set-up created
  const int rank = worker->rank();
  return std::make_unique<ucx::UcxTransport>(std::move(worker), 0, rank, std::vector<int>{});
}

}  // namespace weft
