// Internals of the UCX transport, shared by its source files: ucx_transport.cc (the worker's
// set-up and teardown), ucx_requests.cc (posting, completing and cancelling requests),
// ucx_peer_failure.cc (failed peers) and ucx_share.cc (the Transport each communicator holds:
// a context on a worker). Nothing outside transports/ucx includes this.
#pragma once

#include <sys/types.h>
#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/process_watch.hpp"
#include "transports/transport.hpp"
#include "transports/ucx/ucx_transport.hpp"

namespace weft::ucx {

class UcxWorker;

// One communicator's use of a worker. The communicator that created the worker has context 0
// and the worker's rank numbering; a split child sharing it (shareUcxTransport) has its own id,
// carried in the UCP tag of everything it sends, and its own numbering. Messages name ranks as
// the communicator numbers them.
struct Context {
  uint32_t id = 0;
  int rank = 0;                    // this rank in the communicator's numbering
  std::vector<int> rankOf;         // worker rank -> communicator rank, -1 if not in it; empty: same
  std::atomic<size_t> pending{0};  // its requests in UCX (changed under the worker's lock)
  bool closed = false;

  int shown(int workerRank) const { return rankOf.empty() ? workerRank : rankOf[workerRank]; }
};

// What a posted operation is, for completions and error messages.
struct OpDesc {
  uint64_t tag;
  size_t bytes;  // posted size
  int peer;      // in the worker's numbering
  bool isRecv;
  Context* context;
};

// Lives in the user area of its UCP request (ucp_params_t::request_size): posting allocates
// nothing of ours. Linked into its peer's list until it completes or is detached. `transport` is
// null while the request is not ours (fresh from UCX's pool, or completing inside the post).
struct PendingOp {
  UcxWorker* worker;
  Request* req;  // nullptr once detached
  PendingOp* prev;
  PendingOp* next;
  OpDesc desc;
  bool cancelRequested;
};

struct Peer {
  UcxWorker* owner = nullptr;
  int rank = -1;
  // Its endpoints, each its own connection: message k to this peer (transport tag k) goes on
  // channel k mod `channels`, so a pipelined transfer spreads over all of them. Peers reached
  // over the network get UcxTransportOptions::channels, the others one. All null when not
  // connected and after a failure.
  std::array<ucp_ep_h, kMaxChannels> eps{};
  int channels = 0;
  // After a failure: the force closes in flight, then a short wait for UCX to complete what it
  // purges, before the transport abandons what is left.
  std::array<void*, kMaxChannels> closeRequests{};
  bool draining = false;
  Clock::time_point drainUntil{};
  bool sameHost = false;
  bool ucxErrorHandling = false;
  bool watched = false;
  pid_t pid = 0;
  bool failed = false;
  bool failureHandled = false;
  ucs_status_t failStatus = UCS_OK;
  std::string failDetail;
  PendingOp* pending = nullptr;
  size_t pendingCount = 0;
  bool touched = false;  // a message went to or came from it since the last flush()

  bool connected() const { return eps[0] != nullptr; }
  ucp_ep_h endpointFor(uint64_t tag) const { return eps[tag % static_cast<uint64_t>(channels)]; }
};

// An endpoint flush in flight (flush()): the UCP request, polled, and the peer it concerns.
struct EndpointFlush {
  int peer;
  void* request;
};

// How often progress() polls the pidfds of same-host peers.
constexpr int64_t kWatchIntervalMs = 20;
// How long requests of a failed peer may take to come back from UCX once its endpoint is closed
// (UCX completes purged requests from a later progress call, and not all of them in 1.13).
constexpr int64_t kDrainMs = 1000;
// A valid address for zero-byte messages (never read or written).
inline char zeroByte = 0;

// UCX 1.13 does not fill ucp_request_param_t::recv_info when a receive completes inside
// ucp_tag_recv_nbx (openucx/ucx#9425, fixed in 1.16), so receives are posted with
// UCP_OP_ATTR_FLAG_NO_IMM_CMPL: UCX then calls the callback before returning, and the callback
// leaves the outcome here (through user_data) instead of completing an op not yet tracked.
struct ImmediateRecv {
  bool done = false;
  ucs_status_t status = UCS_OK;
  size_t length = 0;
};

// "recv from rank 1 (tag 0x2a, 64 bytes)", ranks as the op's communicator numbers them
std::string describe(const OpDesc& d);
// Whether an endpoint's lanes ("sysv/memory.0, cma/memory.0", "tcp/eth0.0") include a
// shared-memory transport: refused for peers on other hosts.
bool sharedMemoryLanes(std::string_view lanes);
// Whether a context's resources (UcxWorker::resources: "sysv/memory, tcp/lo, self/memory")
// include a shared-memory transport that carries messages between processes: sysv, posix or
// xpmem (self stays in the process; cma and knem only copy rendezvous data).
bool sharedMemoryResources(std::string_view resources);
// Sets the state last, with release order: a reader that sees it sees `bytes` and `error`.
inline void publish(Request* req, Request::State state) {
  req->state.store(state, std::memory_order_release);
}
void failRequest(Request* req, std::string message);
// Starts closing an endpoint: flushing it first, or at once with `force` (its requests are
// purged). The close request to poll and free, or null when it closed on the spot.
void* closeEndpoint(ucp_ep_h ep, bool force);

// UCP callbacks (ucx_requests.cc; onPeerError in ucx_peer_failure.cc).
void resetRequest(void* request);
void onSendDone(void* request, ucs_status_t status, void* userData);
void onRecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                void* userData);
void onPeerError(void* arg, ucp_ep_h ep, ucs_status_t status);

// The UCP context and worker of one rank, its endpoints to every peer and the requests in
// flight: what createUcxTransport sets up. Communicators use it through UcxTransport
// (ucx_share.cc), one context each; split children with splitShare=1 share their parent's. The
// worker runs in UCS_THREAD_MODE_SERIALIZED and its communicators may be driven from different
// threads: every public method takes mutex_ (recursive: cancel() progresses). UCP callbacks run
// inside ucp_worker_progress, under it.
class UcxWorker {
 public:
  explicit UcxWorker(const UcxTransportOptions& options) : options_(options) {}
  ~UcxWorker() { shutDown(Deadline::afterMs(2000), /*force=*/true); }
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  void setUp(OutOfBand& oob);
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const std::string& label() const { return options_.label; }

  // Contexts: attach before posting, closeContext once done. The last context to close shuts
  // the worker down (flushing its endpoints; force drops them).
  void attach(Context& c);
  void closeContext(Context& c, Deadline deadline, bool force) noexcept;
  // Context ids: the lowest not handed out on this rank; the largest the tag layout can carry
  // with this worker's ranks (tag_layout.hpp); and marking ids up to `id` handed out.
  uint32_t nextContext();
  uint32_t maxContext() const;
  void useContextsUpTo(uint32_t id);
  bool connectedTo(int peer);

  // `peer` in the worker's numbering.
  void postSend(Context& c, int peer, uint64_t tag, const void* buf, size_t bytes, Request* req);
  void postRecv(Context& c, int peer, uint64_t tag, void* buf, size_t bytes, Request* req);
  bool progress();
  int armWake();  // the worker's event fd; disarming needs nothing
  bool flush();
  void cancel(Request* req);
  // The first peer of `c` that failed, named as `c` numbers it; empty when none has.
  std::string lostPeer(const Context& c);
  // The transports UCX chose for the endpoint to `peer` ("sysv/memory.0, cma/memory.0",
  // "tcp/lo.0"); empty when there is none (not connected, or failed).
  std::string lanesTo(int peer);
  // The endpoints (channels) to `peer`; 0 when there is none.
  int channelsTo(int peer);
  // The transports this rank's UCP context may use ("self/memory0, tcp/eth0, tcp/lo,
  // sysv/memory, ..."), from ucp_context_print_info.
  std::string resources();

  // Called from UCP callbacks.
  void completeOp(PendingOp* op, ucs_status_t status, size_t length);
  void markPeerFailed(int peer, ucs_status_t status, std::string detail);

 private:
  // ucx_requests.cc: posting and completing requests.
  void checkPost(const Context& c, int peer, uint64_t tag, Request* req, const char* what) const;
  bool refusePost(const OpDesc& d, Request* req);
  void track(PendingOp* op, const OpDesc& d, Request* req);
  void unlink(PendingOp* op);
  void settle(Request* req, const OpDesc& d, ucs_status_t status, size_t length, bool cancelled);
  void touch(int peer);
  bool progressLocked();
  // ucx_peer_failure.cc: peers that fail, and requests UCX will not give back.
  std::string peerFailure(const Peer& p, const Context* c = nullptr) const;
  void detach(PendingOp* op, Request::State state, std::string message);
  void detachAll(Peer& p, Request::State state, const std::string& why);
  void handleFailures();
  void pollWatch();
  void closeFailedEndpoints(Peer& p);
  // ucx_transport.cc: set-up and teardown.
  void quiesce(Deadline deadline);
  // Marks the requests of context `only` (of every context when null) cancelled and cancels
  // their receives; sends stay with UCP, which cannot withdraw them.
  void cancelPending(const Context* only);
  void withdraw(Context& c, Deadline deadline);
  void shutDown(Deadline deadline, bool force) noexcept;

  std::recursive_mutex mutex_;
  UcxTransportOptions options_;
  int rank_ = -1;
  int nranks_ = 0;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  // Every peer is reached over the network: options_.networkOnly, or a context without
  // shared-memory transports (UCX_TLS).
  bool overNetwork_ = false;
  int eventFd_ = -1;  // the worker's wake-up fd (UCP_FEATURE_WAKEUP); -1: armWake can't
  std::unique_ptr<Peer[]> peers_;
  int rankBits_ = 0;                // of the UCP tag's sender field the ranks use (tag_layout.hpp)
  std::vector<Context*> contexts_;  // open ones
  uint32_t nextContext_ = 1;        // context 0 is the creator's
  ProcessWatch watch_;
  std::vector<int> failedQueue_;  // reserved for every peer: marking a failure never allocates
  std::vector<int> touched_;      // peers with `touched` set; reserved for every peer
  std::vector<EndpointFlush> flushing_;  // reserved for every peer
  std::string lost_;              // the first peer that failed, for lostPeer()
  std::vector<int> exited_;
  int drainingPeers_ = 0;
  size_t pendingOps_ = 0;  // requests in UCX, every peer's pendingCount together
  uint32_t progressCalls_ = 0;
  Clock::time_point nextWatch_{};
  bool closing_ = false;
  bool closed_ = false;
};

// The Transport a communicator holds: its context on a worker, shared with the communicators
// it was split from or into (splitShare=1). Peers are the communicator's ranks.
class UcxTransport final : public Transport {
 public:
  // `workerRanks`: communicator rank -> worker rank; empty when they are the same.
  UcxTransport(std::shared_ptr<UcxWorker> worker, uint32_t context, int rank,
               std::vector<int> workerRanks);
  ~UcxTransport() override;

  const char* name() const override { return "ucx"; }
  void postSend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    worker_->postSend(context_, workerRank(peer, "postSend"), tag, buf, bytes, req);
  }
  void postRecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    worker_->postRecv(context_, workerRank(peer, "postRecv"), tag, buf, bytes, req);
  }
  bool progress() override { return worker_->progress(); }
  int armWake() override { return closed_ ? kCannotWake : worker_->armWake(); }
  bool busy() const override { return context_.pending.load(std::memory_order_relaxed) > 0; }
  bool flush() override { return closed_ || worker_->flush(); }
  void cancel(Request* req) override { worker_->cancel(req); }
  void close(Deadline deadline) override;
  std::string lostPeer() const override { return worker_->lostPeer(context_); }

  uint32_t contextId() const { return context_.id; }
  int nranks() const { return nranks_; }
  UcxWorker& worker() { return *worker_; }
  std::shared_ptr<UcxWorker> sharedWorker() { return worker_; }
  // The worker rank of this communicator's rank `peer`.
  int workerRank(int peer, const char* what) const;
  std::string lanesTo(int peer) { return worker_->lanesTo(workerRank(peer, "lanesTo")); }
  int channelsTo(int peer) { return worker_->channelsTo(workerRank(peer, "channelsTo")); }
  std::string resources() { return worker_->resources(); }

 private:
  std::shared_ptr<UcxWorker> worker_;
  Context context_;
  std::vector<int> workerRanks_;
  int nranks_;
  bool closed_ = false;
};

}  // namespace weft::ucx
