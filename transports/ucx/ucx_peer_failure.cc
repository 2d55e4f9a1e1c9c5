// Failed peers: UCX's error handler (peers with UCX peer error handling), the process watch
// (same-host peers without it) and cancel() mark a peer failed; handleFailures(), called from
// progress() outside UCP callbacks, withdraws its receives, force-closes its endpoint, and
// finishes whatever UCX does not hand back within kDrainMs.
#include "lib/base/log.hpp"
#include "transports/ucx/ucx_transport_impl.hpp"

namespace weft::ucx {

// UCX calls it from ucp_worker_progress for endpoints with UCX peer error handling.
void onPeerError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  peer->owner->markPeerFailed(peer->rank, status, "");
}

std::string UcxWorker::peerFailure(const Peer& p, const Context* c) const {
  const int shown = c != nullptr ? c->shown(p.rank) : p.rank;
  if (!p.failed)
    return fmt::format("rank {} is not among the ranks this UCX transport connects to", shown);
  return fmt::format("connection to rank {} lost: {}{}{}{}", shown, ucs_status_string(p.failStatus),
                     p.failDetail.empty() ? "" : " (", p.failDetail,
                     p.failDetail.empty() ? "" : ")");
}

std::string UcxWorker::lostPeer(const Context& c) {
  std::lock_guard lock(mutex_);
  if (c.rankOf.empty()) return lost_;
  for (int r = 0; peers_ && r < nranks_; ++r) {
    const Peer& p = peers_[r];
    if (p.failed && c.shown(r) >= 0) {
      return fmt::format("connection to rank {} lost: {}", c.shown(r),
                         p.failDetail.empty() ? ucs_status_string(p.failStatus) : p.failDetail);
    }
  }
  return {};
}

void UcxWorker::markPeerFailed(int peer, ucs_status_t status, std::string detail) {
  Peer& p = peers_[peer];
  if (p.failed) return;
  p.failed = true;
  p.failStatus = status;
  p.failDetail = std::move(detail);
  failedQueue_.push_back(peer);
  if (lost_.empty())
    lost_ = fmt::format("connection to rank {} lost: {}", peer,
                        p.failDetail.empty() ? ucs_status_string(status) : p.failDetail);
}

void UcxWorker::pollWatch() {
  Clock::time_point now = Clock::now();
  if (now < nextWatch_) return;
  nextWatch_ = now + std::chrono::milliseconds(kWatchIntervalMs);
  exited_.clear();
  watch_.poll(exited_);
  // Every rank found gone in one look is named: when a survivor failed first and left, the
  // rank that died before it is in the same list.
  if (lost_.empty() && !exited_.empty()) lost_ = watch_.describeExited(exited_);
  for (int r : exited_) {
    markPeerFailed(r, UCS_ERR_CONNECTION_RESET, fmt::format("process {} exited", peers_[r].pid));
  }
}

// Runs outside UCP callbacks: withdraws what UCX will not complete by itself.
void UcxWorker::handleFailures() {
  for (size_t i = 0; i < failedQueue_.size(); ++i) {
    Peer& p = peers_[failedQueue_[i]];
    if (p.failureHandled) continue;
    p.failureHandled = true;
    // A failure that hits no request is not an error yet (after a barrier a peer may close
    // first); later requests to or from it fail with this message.
    if (p.pendingCount > 0 && !closing_) {
      WEFT_WARN(kSubsysNet, "ucx[{}] rank {}: {}; failing {} requests", options_.label, rank_,
                peerFailure(p), p.pendingCount);
    } else {
      WEFT_INFO(kSubsysNet, "ucx[{}] rank {}: {}", options_.label, rank_, peerFailure(p));
    }
    // Receives are not tied to an endpoint: UCX would keep them posted.
    for (PendingOp *op = p.pending, *next = nullptr; op != nullptr; op = next) {
      next = op->next;
      if (op->desc.isRecv) ucp_request_cancel(worker_, op);
    }
    // Sends (and receives already matched) end when the endpoint goes.
    if (p.connected()) closeFailedEndpoints(p);
  }
  failedQueue_.clear();
  if (drainingPeers_ == 0) return;
  const Clock::time_point now = Clock::now();
  for (int r = 0; r < nranks_; ++r) {
    Peer& p = peers_[r];
    if (!p.draining) continue;
    bool closing = false, closed = false;
    for (void*& c : p.closeRequests) {
      if (c == nullptr) continue;
      if (ucp_request_check_status(c) == UCS_INPROGRESS) {
        closing = true;
        continue;
      }
      ucp_request_free(c);
      c = nullptr;
      closed = true;
    }
    if (closing) continue;
    if (closed) p.drainUntil = now + std::chrono::milliseconds(kDrainMs);
    if (p.pendingCount > 0 && now < p.drainUntil) continue;
    detachAll(p, Request::kFailed, "");
    p.draining = false;
    --drainingPeers_;
  }
}

// Every channel goes: a peer is lost for the transport when any of its connections is.
void UcxWorker::closeFailedEndpoints(Peer& p) {
  for (int c = 0; c < kMaxChannels; ++c) {
    if (p.eps[c] == nullptr) continue;
    p.closeRequests[c] = closeEndpoint(p.eps[c], /*force=*/true);
    p.eps[c] = nullptr;
  }
  p.drainUntil = Clock::now() + std::chrono::milliseconds(kDrainMs);
  p.draining = true;
  ++drainingPeers_;
}

// The UCP request stays with UCX (freed without a callback); the caller's Request is finished.
void UcxWorker::detach(PendingOp* op, Request::State state, std::string message) {
  unlink(op);
  Request* req = op->req;
  op->req = nullptr;
  op->worker = nullptr;
  ucp_request_free(op);
  if (req == nullptr) return;
  req->handle = nullptr;
  req->error = std::move(message);
  publish(req, state);
}

void UcxWorker::detachAll(Peer& p, Request::State state, const std::string& why) {
  while (p.pending != nullptr) {
    PendingOp* op = p.pending;
    const Context* c = op->desc.context;
    std::string message = fmt::format("rank {}: {} {}: {}", c->rank, describe(op->desc),
                                      state == Request::kCancelled ? "cancelled" : "failed",
                                      why.empty() ? peerFailure(p, c) : why);
    detach(op, state, std::move(message));
  }
}

}  // namespace weft::ucx
