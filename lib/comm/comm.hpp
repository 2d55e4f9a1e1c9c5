// A communicator: this rank's place among nranks, the transport that connects it to the others,
// and the order in which its operations run.
//
// Operations on one communicator run one at a time, in the order they were issued, whichever
// thread or stream runs them: an operation takes a ticket when it is issued and waits for its
// turn before it runs. That order is what lets every rank pair the k-th operation of its peers
// with its own k-th, and it makes a communicator safe to call from several threads.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/schedule_cache.hpp"
#include "lib/base/deadline.hpp"
#include "lib/base/describer.hpp"
#include "lib/base/error.hpp"
#include "lib/comm/config.hpp"
#include "lib/comm/redop.hpp"
#include "lib/topology/picture.hpp"
#include "lib/tuner/tuner.hpp"
#include "transports/shm/spin_budget.hpp"
#include "transports/transport.hpp"

namespace weft {

class Bootstrap;
class ShmCollectives;
class ShmSegment;
struct LocalGroup;
class ProcessWatch;
struct WaitContext;

class Comm {
 public:
  // The flag that aborts a communicator: shared by the API handle (which may set it while the
  // communicator is still joining) and everything that waits on the communicator's behalf.
  using AbortFlag = std::shared_ptr<std::atomic<bool>>;

  // How a communicator split from another shares its parent's UCX worker (splitShare=1):
  // the parent's UCX transport, the context id every rank of the child agreed on, and the
  // child's ranks as parent ranks.
  struct UcxShare {
    Transport* parentUcx = nullptr;
    uint32_t context = 0;
    std::vector<int> parentRanks;
  };

  // Joins the communicator named by `id` over the network (bootstrap, then UCX: its own
  // worker, or the one `share` names).
  static std::shared_ptr<Comm> connect(const weftUniqueId& id, int nranks, int rank,
                                       const CommConfig& config, AbortFlag abortFlag,
                                       const UcxShare* share = nullptr);

  // A communicator over a given transport (loopback tests). bootstrap may be null; so may
  // abortFlag (a fresh one is made).
  Comm(int rank, int nranks, CommConfig config, std::unique_ptr<Transport> transport,
       std::unique_ptr<Bootstrap> bootstrap, AbortFlag abortFlag = nullptr);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int localRank() const { return localRank_; }
  int localSize() const { return localSize_; }
  const CommConfig& config() const { return config_; }
  // "rank 2 of 4 (comm 'name')": how messages name this rank.
  const std::string& label() const { return label_; }
  Deadline deadline() const { return Deadline::afterMs(config_.timeoutMs); }
  Transport& transport() { return *transport_; }
  // The UCX part of the transport (all of it, or the routed transport's way to other hosts);
  // null when this communicator has none (every rank on this host, with shared memory).
  Transport* ucx() { return ucx_; }
  // Whether ucx() connects to every rank, this one included (not only to other hosts).
  bool ucxToAll() const { return ucx_ != nullptr && ucx_ == transport_.get(); }
  // The communicator's bootstrap (null for communicators made over a given transport).
  Bootstrap* bootstrap() { return bootstrap_.get(); }

  // Issue order. reserve() hands out the next ticket, collective sequence numbers and the
  // point-to-point sequence numbers of one launch, atomically.
  struct Reservation {
    uint64_t ticket = 0;
    uint64_t firstCollective = 0;
  };
  Reservation reserve(uint64_t collectives);
  uint64_t nextSendSeq(int peer);  // call only while holding a reservation's issue order
  uint64_t nextRecvSeq(int peer);
  std::unique_lock<std::mutex> lockIssue() { return std::unique_lock(issueMutex_); }

  // Turns: waits until every earlier ticket has ended. Throws on timeout (the communicator's
  // deadline, from when the wait started) or abort.
  void waitTurn(uint64_t ticket);
  void endTurn(uint64_t ticket);
  // A ticket whose operation will never run (it failed before its turn): skipped when reached.
  void abandonTurn(uint64_t ticket);
  // Waits until every ticket handed out so far has ended.
  void waitIdle(Deadline deadline);

  // Failure: the first error of an operation sticks; later operations fail at once with it.
  void setFailed(const Error& error);
  std::optional<Error> failure() const;
  // Throws if the communicator cannot run operations (failed, aborted, finalized).
  void checkUsable() const;

  // Numbers successive shrinks of this communicator (their messages must not meet).
  uint64_t nextShrinkRound() { return shrinkRounds_++; }

  // Abort: every wait on this communicator returns with an error.
  void abort();
  bool aborted() const { return aborted_->load(std::memory_order_acquire); }
  const std::atomic<bool>* abortFlag() const { return aborted_.get(); }

  // Resources of the operation holding the turn.
  ScheduleCache& schedules() { return schedules_; }
  // At least `bytes` of 64-byte aligned scratch, valid until the next call.
  uint8_t* scratch(size_t bytes);
  RedOpTable& redOps() { return redOps_; }
  // Native shared-memory collectives: set when every rank shares this host and they are not
  // disabled (WEFT_SHM_DISABLE); null otherwise.
  ShmCollectives* shm() { return shm_.get(); }
  // What a shared-memory wait of the operation `op` watches: the deadline, abort, and the
  // processes of the other local ranks (a dead one is weftRemoteError naming it).
  WaitContext shmWait(Describer op);
  // Logs at INFO the first time a collective runs with `how`, and when that changes.
  void noteChoice(Collective collective, const char* how);
  TunerOverrides& overrides() { return overrides_; }
  // Picks algorithm, chunk size and channels per call (WEFT_ALGO, WEFT_TUNE_FILE: a bad value
  // fails the communicator's creation).
  Tuner& tuner() { return *tuner_; }
  // The most ranks any host of this communicator holds (the same on every rank).
  int ranksPerHost() const { return ranksPerHost_; }
  // The host of every rank (0, 1, ... in order of each host's lowest rank); empty when every
  // rank is on one host. Schedules that treat hosts differently read it
  // (CollectiveShape::hostOfRank); tests over one transport (loopback) set it to pretend ranks
  // live on several hosts, before the first operation.
  const std::vector<int>& hostOfRank() const { return hostOfRank_; }
  void setHostOfRank(std::vector<int> hosts) { hostOfRank_ = std::move(hosts); }
  // The merged system picture (set up by connect(); empty for communicators over a given
  // transport) and the ring order it gives: empty when that is the ranks' own order.
  const topology::SystemPicture& topology() const { return topology_; }
  std::span<const int> ringOrder() const { return ringOrder_; }

  // Collective teardown: waits for issued operations, passes a barrier with every rank, closes
  // the transport. Afterwards operations fail with weftInvalidUsage.
  void finalize();
  // finalize's first step, and all of it for communicators whose ranks are all threads of this
  // process and whose owner keeps them all until every rank has finalized (weftCommInitAll's,
  // lib/api/clique.hpp): waits for issued operations only; the transport closes when the
  // communicator goes.
  void finalizeLocally(Deadline deadline);
  bool finalized() const { return finalized_.load(std::memory_order_acquire); }

 private:
  void closeTransport(Deadline deadline);
  LocalGroup localGroup() const;  // the ranks on this host
  void setUpSharedMemory(Deadline deadline);
  void connectHosts(Deadline deadline, const UcxShare* share);
  std::unique_ptr<Transport> makeUcx(const UcxShare* share, std::vector<int> peers,
                                     Deadline deadline);
  void discoverTopology(Deadline deadline);
  void checkLocalPeers();

  const int rank_, nranks_;
  int localRank_ = 0, localSize_ = 1;
  CommConfig config_;
  std::string label_;
  AbortFlag aborted_;  // declared before the transport and bootstrap, which watch it
  std::unique_ptr<Transport> transport_;
  Transport* ucx_ = nullptr;  // in transport_
  std::unique_ptr<Bootstrap> bootstrap_;
  std::atomic<bool> finalized_{false};
  bool transportClosed_ = false;

  std::mutex issueMutex_;
  std::atomic<uint64_t> nextTicket_{0};
  uint64_t nextCollective_ = 0;
  std::vector<uint64_t> sendSeq_, recvSeq_;

  std::mutex turnMutex_;
  std::condition_variable turnCv_;
  std::atomic<uint64_t> turn_{0};         // the ticket allowed to run
  std::atomic<int> turnWaiters_{0};       // threads waiting in waitTurn/waitIdle
  std::set<uint64_t> abandoned_;          // under turnMutex_
  std::atomic<bool> anyAbandoned_{false};
  uint64_t shrinkRounds_ = 0;

  mutable std::mutex failureMutex_;
  std::optional<Error> failure_;
  std::atomic<bool> failed_{false};

  ScheduleCache schedules_;
  std::unique_ptr<uint8_t[], void (*)(uint8_t*)> scratch_{nullptr, [](uint8_t*) {}};
  size_t scratchBytes_ = 0;
  RedOpTable redOps_;
  TunerOverrides overrides_;
  int ranksPerHost_ = 1;
  std::vector<int> hostOfRank_;  // empty: one host
  topology::SystemPicture topology_;
  std::vector<int> ringOrder_;
  std::unique_ptr<Tuner> tuner_;
  std::unique_ptr<ShmSegment> segment_;
  std::unique_ptr<ShmCollectives> shm_;  // after segment_: uses it
  std::unique_ptr<ProcessWatch> localPeers_;
  // How long shared-memory waits spin; learned as they end (transports/shm/spin_budget.hpp).
  std::unique_ptr<SpinBudget> spin_;
  std::mutex watchMutex_;
  std::array<const char*, kNumCollectives> lastChoice_{};
};

}  // namespace weft
