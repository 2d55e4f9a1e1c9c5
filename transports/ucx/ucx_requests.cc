// Posting, completing and cancelling requests: the hot path. Nothing here allocates except
// error messages, and nothing logs above TRACE.
#include <mutex>
#include <thread>

#include "lib/base/error.hpp"
#include "lib/base/log.hpp"
#include "transports/ucx/tag_layout.hpp"
#include "transports/ucx/ucx_transport_impl.hpp"

namespace weft::ucx {

std::string describe(const OpDesc& d) {
  return fmt::format("{} rank {} (tag {:#x}, {} bytes)", d.isRecv ? "recv from" : "send to",
                     d.context->shown(d.peer), d.tag, d.bytes);
}

void failRequest(Request* req, std::string message) {
  WEFT_TRACE(kSubsysNet, "{}", message);
  req->error = std::move(message);
  publish(req, Request::kFailed);
}

void resetRequest(void* request) {
  static_cast<PendingOp*>(request)->worker = nullptr;
}

void onSendDone(void* request, ucs_status_t status, void* /*userData*/) {
  auto* op = static_cast<PendingOp*>(request);
  op->worker->completeOp(op, status, op->desc.bytes);
  op->worker = nullptr;
  ucp_request_free(request);
}

void onRecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                void* userData) {
  auto* op = static_cast<PendingOp*>(request);
  bool lengthKnown = info != nullptr && (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED);
  size_t length = lengthKnown ? info->length : 0;
  if (op->worker == nullptr) {  // inside ucp_tag_recv_nbx: the poster frees the request
    auto* imm = static_cast<ImmediateRecv*>(userData);
    *imm = ImmediateRecv{true, status, length};
    return;
  }
  op->worker->completeOp(op, status, length);
  op->worker = nullptr;
  ucp_request_free(request);
}

void* closeEndpoint(ucp_ep_h ep, bool force) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t sp = ucp_ep_close_nbx(ep, &param);
  return UCS_PTR_IS_PTR(sp) ? sp : nullptr;
}

void UcxWorker::checkPost(const Context& c, int peer, uint64_t tag, Request* req,
                          const char* what) const {
  if (peer < 0 || peer >= nranks_ || (tag & ~kTagMask) != 0 || req == nullptr) {
    fail(weftInternalError, "rank {}: {}(peer {}, tag {:#x}) out of range ({} ranks, {} tag bits)",
         c.rank, what, peer < 0 || peer >= nranks_ ? peer : c.shown(peer), tag, nranks_, kTagBits);
  }
  req->bytes = 0;
  req->error.clear();
  req->handle = nullptr;
  req->state.store(Request::kPosted, std::memory_order_relaxed);
}

// Requests to or from a failed peer, or after close, fail at once without reaching UCX.
bool UcxWorker::refusePost(const OpDesc& d, Request* req) {
  if (closed_ || closing_ || d.context->closed) {
    failRequest(req, fmt::format("rank {}: {} posted after the UCX transport was closed",
                                 d.context->rank, describe(d)));
    return true;
  }
  const Peer& p = peers_[d.peer];
  if (p.failed || !p.connected()) {
    failRequest(req, fmt::format("rank {}: {} failed: {}", d.context->rank, describe(d),
                                 peerFailure(p, d.context)));
    return true;
  }
  return false;
}

void UcxWorker::track(PendingOp* op, const OpDesc& d, Request* req) {
  op->worker = this;
  op->req = req;
  op->desc = d;
  op->cancelRequested = false;
  Peer& p = peers_[d.peer];
  op->prev = nullptr;
  op->next = p.pending;
  if (p.pending != nullptr) p.pending->prev = op;
  p.pending = op;
  ++p.pendingCount;
  ++pendingOps_;
  d.context->pending.fetch_add(1, std::memory_order_relaxed);
  req->handle = op;
}

void UcxWorker::unlink(PendingOp* op) {
  Peer& p = peers_[op->desc.peer];
  if (op->prev != nullptr)
    op->prev->next = op->next;
  else
    p.pending = op->next;
  if (op->next != nullptr) op->next->prev = op->prev;
  op->prev = op->next = nullptr;
  --p.pendingCount;
  --pendingOps_;
  op->desc.context->pending.fetch_sub(1, std::memory_order_relaxed);
}

// UCX on this rank may owe the peer a message after the request completes (flush()). Only
// shared-memory endpoints are flushed: see flush(). Peers with UCX error handling are the ones
// reached over the network, on other hosts or, with a UCX_TLS that leaves shared memory out,
// on this one (UcxWorker::overNetwork_).
void UcxWorker::touch(int peer) {
  Peer& p = peers_[peer];
  if (p.touched || peer == rank_ || !p.sameHost || p.ucxErrorHandling) return;
  p.touched = true;
  touched_.push_back(peer);
}

void UcxWorker::postSend(Context& c, int peer, uint64_t tag, const void* buf, size_t bytes,
                         Request* req) {
  std::lock_guard lock(mutex_);
  checkPost(c, peer, tag, req, "postSend");
  OpDesc d{tag, bytes, peer, false, &c};
  if (refusePost(d, req)) return;
  touch(peer);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
  param.cb.send = onSendDone;
  ucs_status_ptr_t sp = ucp_tag_send_nbx(peers_[peer].endpointFor(tag), bytes > 0 ? buf : &zeroByte,
                                         bytes, packTag(c.id, rankBits_, rank_, tag), &param);
  if (UCS_PTR_IS_PTR(sp)) {
    track(static_cast<PendingOp*>(sp), d, req);
  } else {
    settle(req, d, UCS_PTR_STATUS(sp), bytes, false);
  }
}

void UcxWorker::postRecv(Context& c, int peer, uint64_t tag, void* buf, size_t bytes,
                         Request* req) {
  std::lock_guard lock(mutex_);
  checkPost(c, peer, tag, req, "postRecv");
  OpDesc d{tag, bytes, peer, true, &c};
  if (refusePost(d, req)) return;
  touch(peer);
  ImmediateRecv imm;
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = onRecvDone;
  param.user_data = &imm;
  ucs_status_ptr_t sp = ucp_tag_recv_nbx(worker_, bytes > 0 ? buf : &zeroByte, bytes,
                                         packTag(c.id, rankBits_, peer, tag), kFullTagMask, &param);
  if (!UCS_PTR_IS_PTR(sp)) {
    settle(req, d, UCS_PTR_STATUS(sp), 0, false);
  } else if (imm.done) {
    ucp_request_free(sp);
    settle(req, d, imm.status, imm.length, false);
  } else {
    track(static_cast<PendingOp*>(sp), d, req);
  }
}

void UcxWorker::completeOp(PendingOp* op, ucs_status_t status, size_t length) {
  unlink(op);
  Request* req = op->req;
  op->req = nullptr;
  if (req == nullptr) return;
  req->handle = nullptr;
  settle(req, op->desc, status, length, op->cancelRequested);
}

// Writes the outcome into the caller's Request; the state goes last, with release order.
void UcxWorker::settle(Request* req, const OpDesc& d, ucs_status_t status, size_t length,
                       bool cancelled) {
  if (status == UCS_OK && (!d.isRecv || length == d.bytes)) {
    req->bytes = d.bytes;
    publish(req, Request::kDone);
  } else if (d.isRecv && (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED)) {
    // UCP reports the sender's size on truncation; never writes past the receive buffer.
    std::string has = length > d.bytes || status == UCS_OK ? fmt::format("{}", length)
                                                           : fmt::format("more than {}", d.bytes);
    failRequest(req,
                fmt::format("rank {}: message from rank {} (tag {:#x}) has {} bytes, expected {}",
                            d.context->rank, d.context->shown(d.peer), d.tag, has, d.bytes));
  } else if (cancelled && status == UCS_ERR_CANCELED) {
    req->error = fmt::format("rank {}: {} cancelled", d.context->rank, describe(d));
    publish(req, Request::kCancelled);
  } else if (peers_[d.peer].failed) {
    failRequest(req, fmt::format("rank {}: {} failed: {}", d.context->rank, describe(d),
                                 peerFailure(peers_[d.peer], d.context)));
  } else {
    failRequest(req, fmt::format("rank {}: {} failed: {}", d.context->rank, describe(d),
                                 ucs_status_string(status)));
  }
}

bool UcxWorker::progress() {
  std::lock_guard lock(mutex_);
  return progressLocked();
}

bool UcxWorker::progressLocked() {
  bool moved = ucp_worker_progress(worker_) != 0;
  if (!watch_.empty() && (++progressCalls_ & 63) == 0) pollWatch();
  if (!failedQueue_.empty()) {
    handleFailures();
    moved = true;
  } else if (drainingPeers_ > 0) {
    handleFailures();
  }
  return moved;
}

// UCX completes a rendezvous receive when the data is in place and sends the sender the
// acknowledgement (ATS) that completes the send, and a rendezvous put completes the send before
// the notice (ATP) that completes the receive is out. When the peer's receive queue is full
// (sysv: one FIFO per receiving worker, shared by all its senders), that message waits on this
// rank's endpoint until a progress call finds room. ucp_worker_flush does not wait for it (it
// asks the interfaces, whose own queues are empty); an endpoint flush queues behind it. So every
// shared-memory endpoint used since the last flush is flushed, and only then does the operation
// end: flushing one (sysv, posix, cma, self) waits on this rank's own queues only. Network
// endpoints are left alone: a tcp endpoint's flush also waits for the peer to acknowledge every
// rendezvous put (UCT_FLUSH_FLAG_LOCAL notwithstanding), which takes the peer's progress, the
// very thing a rank that has returned cannot count on (a 2+1+2-host run hung there). That
// holds for tcp between ranks of one host too (UCX_TLS without shared memory, where every
// thread-rank test that destroys a communicator after its last collective hung): those peers
// get UCX error handling (overNetwork_), which leaves them out here.
bool UcxWorker::flush() {
  std::lock_guard lock(mutex_);
  if (closed_ || closing_) return true;
  for (int r : touched_) {
    Peer& p = peers_[r];
    p.touched = false;
    if (p.failed || !p.connected()) continue;
    ucp_request_param_t param{};
    ucs_status_ptr_t sp = ucp_ep_flush_nbx(p.eps[0], &param);  // shared memory: one channel
    // An error status means the endpoint failed: its requests report that, nothing is owed.
    if (UCS_PTR_IS_PTR(sp)) flushing_.push_back({r, sp});
  }
  touched_.clear();
  if (flushing_.empty()) return true;
  progressLocked();
  size_t kept = 0;
  for (const EndpointFlush& f : flushing_) {
    // A peer that failed meanwhile is owed nothing: UCX releases the request when it completes.
    if (ucp_request_check_status(f.request) == UCS_INPROGRESS && !peers_[f.peer].failed) {
      flushing_[kept++] = f;
      continue;
    }
    ucp_request_free(f.request);
  }
  flushing_.resize(kept);
  return flushing_.empty();
}

int UcxWorker::armWake() {
  std::lock_guard lock(mutex_);
  if (eventFd_ < 0 || closed_) return Transport::kCannotWake;
  // arm() says BUSY when events are already pending: progress again rather than sleep.
  const ucs_status_t status = ucp_worker_arm(worker_);
  if (status == UCS_ERR_BUSY) return Transport::kWakeNow;
  if (status != UCS_OK) return Transport::kCannotWake;
  return eventFd_;
}

void UcxWorker::cancel(Request* req) {
  std::lock_guard lock(mutex_);
  if (req->finished()) return;
  auto* op = static_cast<PendingOp*>(req->handle);
  if (op == nullptr) {  // not in UCX (cannot happen for a posted request; be safe)
    req->error = fmt::format("rank {}: request cancelled", rank_);
    publish(req, Request::kCancelled);
    return;
  }
  op->cancelRequested = true;
  const OpDesc d = op->desc;
  bool endpointClosed = false;
  if (d.isRecv) {
    ucp_request_cancel(worker_, op);  // completes it now unless UCX matched it already
  } else {
    // UCP cannot withdraw a send. Give one already under way a moment, then close the endpoint:
    // the peer is lost for this transport, which is what a cancel means for the communicator.
    for (int i = 0; i < 64 && !req->finished(); ++i) progressLocked();
    if (!req->finished()) {
      markPeerFailed(d.peer, UCS_ERR_CANCELED,
                     "closed by cancel() of a send, which UCP cannot withdraw");
      handleFailures();
      endpointClosed = true;
    }
  }
  Deadline grace = Deadline::afterMs(options_.cancelGraceMs);
  while (!req->finished()) {
    if (!progressLocked()) std::this_thread::yield();
    if (!grace.expired()) continue;
    if (!endpointClosed) {
      markPeerFailed(
          d.peer, UCS_ERR_CANCELED,
          fmt::format("closed by cancel() of a matched receive still in flight after {} ms",
                      options_.cancelGraceMs));
      handleFailures();
      endpointClosed = true;
      grace = Deadline::afterMs(options_.cancelGraceMs);
    } else if (auto* stuck = static_cast<PendingOp*>(req->handle)) {
      WEFT_WARN(kSubsysNet, "ucx[{}] rank {}: {} not released by UCX after cancel; abandoning it",
                options_.label, d.context->rank, describe(d));
      detach(stuck, Request::kCancelled,
             fmt::format("rank {}: {} cancelled (abandoned)", d.context->rank, describe(d)));
    }
  }
}

}  // namespace weft::ucx
