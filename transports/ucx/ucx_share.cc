// The Transport a communicator holds (UcxTransport: a context on a rank's worker), and sharing
// one worker between a communicator and those split from it.
#include <utility>

#include "lib/base/error.hpp"
#include "lib/base/log.hpp"
#include "transports/ucx/tag_layout.hpp"
#include "transports/ucx/ucx_transport_impl.hpp"

namespace weft {
namespace ucx {

UcxTransport::UcxTransport(std::shared_ptr<UcxWorker> worker, uint32_t context, int rank,
                           std::vector<int> workerRanks)
    : worker_(std::move(worker)), workerRanks_(std::move(workerRanks)) {
  nranks_ = workerRanks_.empty() ? worker_->nranks() : static_cast<int>(workerRanks_.size());
  context_.id = context;
  context_.rank = rank;
  if (!workerRanks_.empty()) {
    context_.rankOf.assign(static_cast<size_t>(worker_->nranks()), -1);
    for (int r = 0; r < nranks_; ++r) context_.rankOf[workerRanks_[r]] = r;
  }
  worker_->attach(context_);
}

UcxTransport::~UcxTransport() {
  if (!closed_) worker_->closeContext(context_, Deadline::afterMs(2000), /*force=*/true);
}

void UcxTransport::close(Deadline deadline) {
  closed_ = true;
  worker_->closeContext(context_, deadline, /*force=*/false);
}

int UcxTransport::workerRank(int peer, const char* what) const {
  if (peer < 0 || peer >= nranks_) {
    fail(weftInternalError, "rank {}: {}(peer {}) out of range ({} ranks)", context_.rank, what,
         peer, nranks_);
  }
  return workerRanks_.empty() ? peer : workerRanks_[peer];
}

}  // namespace ucx

namespace {

ucx::UcxTransport& asUcx(Transport& t, const char* what) {
  auto* ucx = dynamic_cast<ucx::UcxTransport*>(&t);
  if (ucx == nullptr) fail(weftInternalError, "{}: the transport is '{}', not UCX", what, t.name());
  return *ucx;
}

}  // namespace

UcxContextIds ucxContextIds(Transport& t) {
  ucx::UcxWorker& worker = asUcx(t, "ucxContextIds").worker();
  return {worker.nextContext(), worker.maxContext()};
}

std::unique_ptr<Transport> shareUcxTransport(Transport& t, uint32_t context,
                                             std::span<const int> parentRanks, int rank,
                                             std::span<const int> peers, const std::string& label) {
  ucx::UcxTransport& parent = asUcx(t, "shareUcxTransport");
  ucx::UcxWorker& worker = parent.worker();
  const int n = static_cast<int>(parentRanks.size());
  if (context == 0 || context > worker.maxContext() || rank < 0 || rank >= n) {
    fail(weftInternalError,
         "{}: cannot share the UCX worker as context {} (1..{} with {} ranks on it), rank {} of {}",
         label, context, worker.maxContext(), worker.nranks(), rank, n);
  }
  std::vector<int> workerRanks;
  for (int p : parentRanks) workerRanks.push_back(parent.workerRank(p, "shareUcxTransport"));
  for (int peer : peers) {
    if (peer < 0 || peer >= n || !worker.connectedTo(workerRanks[peer])) {
      fail(weftInternalError,
           "{}: rank {} of the new communicator is not reached by the UCX worker it would share",
           label, peer);
    }
  }
  worker.useContextsUpTo(context);
  const int me = workerRanks[rank];
  auto shared = std::make_unique<ucx::UcxTransport>(parent.sharedWorker(), context, rank,
                                                    std::move(workerRanks));
  WEFT_INFO(kSubsysNet,
            "ucx[{}] rank {}/{}: shares the UCX worker of ucx[{}] (rank {} there) as context {}: "
            "{} peer(s), no new endpoints",
            label, rank, n, worker.label(), me, context, peers.size());
  return shared;
}

}  // namespace weft
