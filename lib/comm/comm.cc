#include "lib/comm/comm.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>

#include "algorithms/shm/shm_collectives.hpp"
#include "lib/base/env.hpp"
#include "lib/base/log.hpp"
#include "lib/base/process_watch.hpp"
#include "lib/bootstrap/bootstrap.hpp"
#include "lib/bootstrap/unique_id.hpp"
#include "lib/topology/discover.hpp"
#include "transports/loopback/loopback.hpp"
#include "transports/routed/routed_transport.hpp"
#include "transports/shm/core_agreement.hpp"
#include "transports/shm/memory.hpp"
#include "transports/shm/segment.hpp"
#include "transports/shm/shm_transport.hpp"
#include "transports/ucx/ucx_transport.hpp"

namespace weft {
namespace {

constexpr int kTurnPollMs = 100;  // how often a waiting operation looks at the abort flag

std::string makeLabel(int rank, int nranks, const std::string& name) {
  std::string label = fmt::format("rank {} of {}", rank, nranks);
  if (!name.empty()) label += fmt::format(" (comm '{}')", name);
  return label;
}

void freeAligned(uint8_t* p) { ::operator delete[](p, std::align_val_t{64}); }

}  // namespace

Comm::Comm(int rank, int nranks, CommConfig config, std::unique_ptr<Transport> transport,
           std::unique_ptr<Bootstrap> bootstrap, AbortFlag abortFlag)
    : rank_(rank), nranks_(nranks), config_(std::move(config)),
      label_(makeLabel(rank, nranks, config_.name)),
      aborted_(abortFlag ? std::move(abortFlag) : std::make_shared<std::atomic<bool>>(false)),
      transport_(std::move(transport)),
      bootstrap_(std::move(bootstrap)), sendSeq_(nranks, 0), recvSeq_(nranks, 0) {
  if (bootstrap_) {
    // Ranks share a host when they can share memory (same host identity).
    const std::string& mine = bootstrap_->rankInfo(rank_).hostId;
    localSize_ = 0;
    std::map<std::string, int> perHost, hostIndex;
    for (int r = 0; r < nranks_; ++r) {
      const std::string& id = bootstrap_->rankInfo(r).hostId;
      const int index = static_cast<int>(hostIndex.size());
      hostOfRank_.push_back(hostIndex.emplace(id, index).first->second);
      ranksPerHost_ = std::max(ranksPerHost_, ++perHost[bootstrap_->rankInfo(r).hostId]);
      if (bootstrap_->rankInfo(r).hostId != mine) continue;
      if (r < rank_) ++localRank_;
      ++localSize_;
    }
    if (hostIndex.size() == 1) hostOfRank_.clear();
  } else {
    localRank_ = rank_;
    localSize_ = nranks_;
    ranksPerHost_ = nranks_;
  }
  tuner_ = std::make_unique<Tuner>(nranks_, ranksPerHost_);
}

Comm::~Comm() {
  if (transport_ && !transportClosed_) closeTransport(Deadline::afterMs(1000));
  // The shared-memory transport and collectives use the segment: they go first.
  transport_.reset();
  shm_.reset();
  segment_.reset();
}

std::shared_ptr<Comm> Comm::connect(const weftUniqueId& id, int nranks, int rank,
                                    const CommConfig& config, AbortFlag abortFlag,
                                    const UcxShare* share) {
  const Deadline deadline = Deadline::afterMs(config.timeoutMs);
  const UniqueId parsed = UniqueId::fromWire(id);
  std::unique_ptr<Bootstrap> bootstrap =
      Bootstrap::connect(parsed, rank, nranks, deadline, abortFlag.get());
  auto comm = std::make_shared<Comm>(rank, nranks, config, nullptr, std::move(bootstrap),
                                     std::move(abortFlag));
  comm->discoverTopology(deadline);
  // Ranks that all share this host talk through shared memory; otherwise UCX. (One rank needs
  // no transport at all: its sends to itself are copies.)
  comm->setUpSharedMemory(deadline);
  if (!comm->transport_ && nranks == 1) comm->transport_ = std::move(createLoopbackTransports(1)[0]);
  if (!comm->transport_) comm->connectHosts(deadline, share);
  WEFT_INFO(kSubsysInit, "{}: ready; {} of {} rank(s) on this host; transport {}; {}",
            comm->label(), comm->localSize(), nranks, comm->transport().name(),
            comm->shm() ? "shared-memory collectives" : "no shared-memory collectives");
  return comm;
}

namespace {

// This host's graph, discovered once per process and source (hwloc with I/O objects takes
// milliseconds; communicators are created often in tests and by split).
const topology::Graph& hostGraph(const topology::Source& source) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, topology::Graph> cache;
  std::lock_guard lock(mutex);
  const auto key = std::make_pair(source.xmlFile, source.synthetic);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, topology::discover(source)).first;
  return it->second;
}

}  // namespace

// Every rank describes what it sees; the descriptions travel over the bootstrap and every rank
// merges the same list, so all decide from one picture. A rank whose discovery failed sends its
// error instead, so that every rank fails with it rather than some waiting for the others.
void Comm::discoverTopology(Deadline deadline) {
  std::vector<uint8_t> mine;
  try {
    topology::LocalView view;
    view.hostId = bootstrap_->rankInfo(rank_).hostId;
    view.cpu = topology::currentCpu();
    view.graph = hostGraph(topology::sourceFromEnv());
    mine = topology::encodeView(view);
    mine.insert(mine.begin(), 1);
  } catch (const Error& e) {
    const std::string what = e.what();
    mine.assign(what.begin(), what.end());
    mine.insert(mine.begin(), 0);
  }
  const std::vector<std::vector<uint8_t>> all = bootstrap_->allGather(mine, deadline);
  std::vector<topology::LocalView> views;
  for (int r = 0; r < nranks_; ++r) {
    const std::vector<uint8_t>& blob = all[r];
    if (blob.empty() || blob[0] != 1)
      fail(weftInvalidArgument, "{}: topology discovery failed on rank {}: {}", label_, r,
           blob.empty() ? std::string("(nothing sent)")
                        : std::string(blob.begin() + 1, blob.end()));
    views.push_back(topology::decodeView(std::span(blob).subspan(1), r));
  }
  topology_ = topology::mergeViews(views);
  bool natural = true;
  for (int i = 0; i < nranks_; ++i) natural = natural && topology_.ring[i] == i;
  if (!natural) ringOrder_ = topology_.ring;
  WEFT_INFO(kSubsysTopo, "{}: {} host(s); ring order {}", label_,
            topology_.graph.count(topology::NodeKind::Host),
            natural ? std::string("0..n-1") : fmt::format("{}", fmt::join(topology_.ring, " ")));
  const std::string& dump = env().topoDumpFile;
  if (rank_ == 0 && !dump.empty()) {
    std::FILE* f = std::fopen(dump.c_str(), "w");
    const std::string json = topology::formatPictureJson(topology_);
    if (!f || std::fwrite(json.data(), 1, json.size(), f) != json.size())
      WEFT_WARN(kSubsysTopo, "{}: cannot write WEFT_TOPO_DUMP_FILE '{}': {}", label_, dump,
                std::strerror(errno));
    if (f) std::fclose(f);
  }
}

LocalGroup Comm::localGroup() const {
  LocalGroup group;
  const std::string& mine = bootstrap_->rankInfo(rank_).hostId;
  for (int r = 0; r < nranks_; ++r) {
    if (bootstrap_->rankInfo(r).hostId != mine) continue;
    if (r == rank_) group.me = group.size();
    group.ranks.push_back(r);
    group.pids.push_back(static_cast<pid_t>(bootstrap_->rankInfo(r).pid));
  }
  group.oneProcess = std::all_of(group.pids.begin(), group.pids.end(),
                                 [&](pid_t p) { return p == group.pids.front(); });
  return group;
}

// Native shared-memory collectives when every rank is on this host. Collective over the
// bootstrap: every rank takes the same branch (the host identities are the same everywhere).
void Comm::setUpSharedMemory(Deadline deadline) {
  const Env& e = env();
  if (nranks_ == 1 || localSize_ != nranks_ || e.shmDisable) return;
  const LocalGroup group = localGroup();
  const CoreAgreement cores = agreeOnCores(*bootstrap_, group, e.shmCores, deadline);
  const uint64_t slotBytes =
      e.shmSlotBytes ? e.shmSlotBytes : defaultSlotBytes(nranks_, cores.oversubscribed);
  const SegmentGeometry geometry =
      SegmentGeometry::make(nranks_, slotBytes, defaultMailboxBytes(nranks_));
  segment_ = ShmSegment::create(*bootstrap_, group, toHex(bootstrap_->commId()), geometry,
                                deadline);
  const ShmMode mode = e.shmMode == "staged" ? ShmMode::Staged
                       : e.shmMode == "cma"  ? ShmMode::Cma
                                             : ShmMode::Auto;
  spin_ = makeSpinBudget(cores.oversubscribed);
  shm_ = std::make_unique<ShmCollectives>(*segment_, group, mode, cores, e.shmCmaCost, e.shmSpread,
                                          e.shmTune);
  if (!group.oneProcess) {
    localPeers_ = std::make_unique<ProcessWatch>();
    for (int r = 0; r < nranks_; ++r)
      if (r != rank_) localPeers_->add(r, group.pids[r]);
  }
  ShmTransportOptions transportOptions;
  transportOptions.label = label_;
  transport_ = createShmTransport(*segment_, group, transportOptions);
  shm_->setUp(shmWait({nullptr, nullptr, "shared-memory set-up"}));
  WEFT_INFO(kSubsysShm, "{}: {} local ranks on {} cores{}", label_, group.size(), shm_->cores(),
            shm_->oversubscribed() ? ": ranks share cores" : "");
  if (mode == ShmMode::Cma && !shm_->cmaWorks())
    fail(weftSystemError, "{}: WEFT_SHM_MODE=cma, but the kernel refuses CMA between these "
         "processes (ptrace_scope?)", label_);
}

// Ranks on several hosts: UCX to every peer on another host and, where a host has several
// ranks (WEFT_SHM_DISABLE unset), weft's shared-memory transport to the peers on this one. Every
// rank then maps a segment of mailboxes for its host's ranks, even one alone there, so that all
// take the same steps over the bootstrap. Collective, like setUpSharedMemory.
void Comm::connectHosts(Deadline deadline, const UcxShare* share) {
  if (ranksPerHost_ < 2 || env().shmDisable) {
    std::vector<int> everyone(nranks_);
    for (int r = 0; r < nranks_; ++r) everyone[r] = r;
    transport_ = makeUcx(share, std::move(everyone), deadline);
    ucx_ = transport_.get();
    return;
  }
  const LocalGroup group = localGroup();
  const SegmentGeometry geometry =
      SegmentGeometry::make(group.size(), 0, defaultMailboxBytes(group.size()));
  segment_ = ShmSegment::create(*bootstrap_, group, toHex(bootstrap_->commId()), geometry,
                                deadline);
  ShmTransportOptions shmOptions;
  shmOptions.label = label_;
  std::vector<Route> routes(nranks_, Route{1, 0});
  for (int r = 0; r < nranks_; ++r) routes[r].peer = r;
  for (int r : group.ranks) routes[r].way = 0;
  std::vector<int> others;
  for (int r = 0; r < nranks_; ++r)
    if (routes[r].way == 1) others.push_back(r);
  std::vector<std::unique_ptr<Transport>> ways;
  ways.push_back(createShmTransport(*segment_, group, shmOptions));
  ways.push_back(makeUcx(share, std::move(others), deadline));
  ucx_ = ways.back().get();
  transport_ = createRoutedTransport(std::move(ways), std::move(routes));
}

// The UCX transport to `peers` (all ranks, or those on other hosts): a worker of its own or,
// for a split child with splitShare=1, a context on its parent's.
std::unique_ptr<Transport> Comm::makeUcx(const UcxShare* share, std::vector<int> peers,
                                         Deadline deadline) {
  if (share != nullptr) {
    return shareUcxTransport(*share->parentUcx, share->context, share->parentRanks, rank_, peers,
                             label_);
  }
  UcxTransportOptions options;
  options.label = label_;
  options.setupDeadline = deadline;
  static_assert(kMaxChannels == 8, "WEFT_NET_CHANNELS takes 1..8 (lib/base/env.cc)");
  options.channels = env().netChannels;
  if (static_cast<int>(peers.size()) < nranks_) {
    // UCX connects only to the other hosts, over network transports: no endpoints to peers
    // that shared memory carries, and no shared-memory interfaces in the worker.
    options.peers = std::move(peers);
    options.networkOnly = true;
  }
  return createUcxTransport(*bootstrap_, options);
}

WaitContext Comm::shmWait(Describer op) {
  WaitContext w;
  w.timeoutMs = config_.timeoutMs;
  w.abortFlag = abortFlag();
  w.prefix = label_;
  w.op = op;
  w.spin = spin_.get();
  if (localPeers_) w.checkPeers = [this] { checkLocalPeers(); };
  return w;
}

void Comm::noteChoice(Collective collective, const char* how) {
  const char*& last = lastChoice_[static_cast<int>(collective)];
  if (last == how) return;
  last = how;
  WEFT_INFO(kSubsysTune, "{}: {} runs as {}", label_, collectiveName(collective), how);
}

void Comm::checkLocalPeers() {
  std::vector<int> exited;
  {
    std::lock_guard lock(watchMutex_);
    localPeers_->poll(exited);
  }
  if (exited.size() == 1)
    fail(weftRemoteError, "{}: rank {} exited (its process is gone)", label_, exited.front());
  if (!exited.empty())
    fail(weftRemoteError, "{}: ranks {} exited (their processes are gone)", label_,
         fmt::join(exited, ", "));
}

Comm::Reservation Comm::reserve(uint64_t collectives) {
  // Callers hold lockIssue() so that point-to-point numbers follow the same order.
  Reservation r;
  r.ticket = nextTicket_.fetch_add(1, std::memory_order_acq_rel);
  r.firstCollective = nextCollective_;
  nextCollective_ += collectives;
  return r;
}

uint64_t Comm::nextSendSeq(int peer) { return sendSeq_[peer]++; }
uint64_t Comm::nextRecvSeq(int peer) { return recvSeq_[peer]++; }

void Comm::waitTurn(uint64_t ticket) {
  if (turn_.load(std::memory_order_acquire) == ticket) return;  // the usual case: no lock
  const Deadline deadline = this->deadline();
  std::unique_lock lock(turnMutex_);
  turnWaiters_.fetch_add(1, std::memory_order_seq_cst);
  while (turn_.load(std::memory_order_seq_cst) != ticket) {
    if (aborted() || deadline.expired()) {
      turnWaiters_.fetch_sub(1);
      if (aborted())
        fail(kAbortedResult, "{}: operation not started: the communicator was aborted", label_);
      fail(weftTimeout,
           "{}: operation #{} waited {} ms for the communicator's earlier operations to finish",
           label_, ticket, config_.timeoutMs);
    }
    turnCv_.wait_for(lock, std::chrono::milliseconds(kTurnPollMs));
  }
  turnWaiters_.fetch_sub(1);
}

void Comm::endTurn(uint64_t ticket) {
  if (!anyAbandoned_.load(std::memory_order_acquire)) {
    turn_.store(ticket + 1, std::memory_order_seq_cst);
  } else {
    std::lock_guard lock(turnMutex_);
    uint64_t next = ticket + 1;
    while (abandoned_.erase(next) > 0) ++next;
    turn_.store(next, std::memory_order_seq_cst);
  }
  // A waiter registers before it checks turn_ (both sequentially consistent), so either it saw
  // the new turn or it is counted here and gets the notification under the lock.
  if (turnWaiters_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard lock(turnMutex_);
    turnCv_.notify_all();
  }
}

void Comm::abandonTurn(uint64_t ticket) {
  {
    std::lock_guard lock(turnMutex_);
    if (ticket != turn_.load()) {
      abandoned_.insert(ticket);
      anyAbandoned_.store(true, std::memory_order_release);
      return;
    }
  }
  endTurn(ticket);
}

void Comm::waitIdle(Deadline deadline) {
  std::unique_lock lock(turnMutex_);
  turnWaiters_.fetch_add(1, std::memory_order_seq_cst);
  while (turn_.load() != nextTicket_.load(std::memory_order_acquire)) {
    if (deadline.expired()) {
      turnWaiters_.fetch_sub(1);
      fail(weftTimeout, "{}: {} operation(s) still unfinished after {} ms", label_,
           nextTicket_.load() - turn_.load(), config_.timeoutMs);
    }
    turnCv_.wait_for(lock, std::chrono::milliseconds(kTurnPollMs));
  }
  turnWaiters_.fetch_sub(1);
}

void Comm::setFailed(const Error& error) {
  std::lock_guard lock(failureMutex_);
  if (!failure_) failure_ = error;
  failed_.store(true, std::memory_order_release);
}

std::optional<Error> Comm::failure() const {
  if (!failed_.load(std::memory_order_acquire)) return std::nullopt;  // no lock on the hot path
  std::lock_guard lock(failureMutex_);
  return failure_;
}

void Comm::checkUsable() const {
  if (aborted()) fail(kAbortedResult, "{}: the communicator was aborted", label_);
  if (finalized()) fail(weftInvalidUsage, "{}: the communicator was finalized", label_);
  if (auto f = failure())
    throw Error(f->result(), fmt::format("{}: the communicator failed earlier and must be "
                                         "destroyed or aborted: {}",
                                         label_, f->what()));
}

void Comm::abort() {
  aborted_->store(true, std::memory_order_release);
  turnCv_.notify_all();
}

uint8_t* Comm::scratch(size_t bytes) {
  if (bytes > scratchBytes_) {
    const size_t size = std::max(bytes, scratchBytes_ * 2);
    scratch_.reset();
    if (shm_) {
      // Shareable, so that inputs scaled into scratch (average, pre-multiplied sum) can still
      // be read in place by the peers when the caller's buffers can.
      scratch_ = {static_cast<uint8_t*>(SharedRegions::instance().allocate(size)),
                  [](uint8_t* p) { SharedRegions::instance().release(p); }};
    } else {
      scratch_ = {static_cast<uint8_t*>(::operator new[](size, std::align_val_t{64})),
                  &freeAligned};
    }
    scratchBytes_ = size;
  }
  return scratch_.get();
}

void Comm::finalize() {
  const Deadline deadline = this->deadline();
  finalizeLocally(deadline);
  if (bootstrap_ && !aborted() && !failure()) bootstrap_->barrier(deadline);
  closeTransport(deadline);
}

void Comm::finalizeLocally(Deadline deadline) {
  if (finalized()) fail(weftInvalidUsage, "{}: the communicator was already finalized", label_);
  waitIdle(deadline);
  finalized_.store(true, std::memory_order_release);
}

void Comm::closeTransport(Deadline deadline) {
  transportClosed_ = true;
  try {
    transport_->close(deadline);
  } catch (const Error& e) {
    WEFT_WARN(kSubsysInit, "{}: closing the transport: {}", label_, e.what());
  }
}

}  // namespace weft
