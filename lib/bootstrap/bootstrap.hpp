// The bootstrap of one communicator: every rank says hello to the root named by the unique id,
// learns every other rank's listen address, host identity and pid and the communicator id, and
// then joins a ring of authenticated TCP connections (rank r connects to rank r+1 and accepts
// rank r-1) over which allGather and barrier run. Transports use it, through OutOfBand, to swap
// addresses at set-up.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/base/deadline.hpp"
#include "lib/bootstrap/handshake.hpp"
#include "lib/bootstrap/root_protocol.hpp"
#include "lib/bootstrap/socket.hpp"
#include "lib/bootstrap/unique_id.hpp"
#include "transports/transport.hpp"

namespace weft {

class Bootstrap : public OutOfBand {
 public:
  // Joins the communicator of `nranks` ranks whose root the unique id names, as `rank`.
  // Throws weftInvalidArgument for a bad rank or nranks, weftInvalidUsage when the ranks
  // disagree (the message names both ranks and their values), weftTimeout at the deadline (the
  // message names the ranks that never joined), weftRemoteError when a peer fails, and
  // kAbortedResult when *abortFlag becomes true. The abort flag is also watched by every later
  // call and must outlive the Bootstrap.
  static std::unique_ptr<Bootstrap> connect(const UniqueId& id, int rank, int nranks,
                                            Deadline deadline,
                                            const std::atomic<bool>* abortFlag = nullptr);
  ~Bootstrap() override;

  int rank() const override { return rank_; }
  int nranks() const override { return static_cast<int>(ranks_.size()); }
  // Random, fresh for every communicator the root forms.
  const CommId& commId() const { return commId_; }
  const RankInfo& rankInfo(int rank) const { return ranks_.at(static_cast<size_t>(rank)); }
  std::span<const RankInfo> rankInfos() const { return ranks_; }

  // Ring allGather: n-1 steps, each sending one block to the next rank while receiving one from
  // the previous. Blobs may differ in size (up to kMaxBlobBytes) and be empty. Every rank must
  // make the same sequence of allGather/barrier calls. After a failure the ring is broken and
  // every later call fails.
  std::vector<std::vector<uint8_t>> allGather(std::span<const uint8_t> mine,
                                              Deadline deadline) override;
  // Returns once every rank has entered the barrier.
  void barrier(Deadline deadline) override;

 private:
  Bootstrap(int rank, const UniqueId& id, const std::atomic<bool>* abortFlag);
  void formRing(Fd listener, Deadline deadline);

  int rank_;
  UniqueId id_;
  const std::atomic<bool>* abortFlag_;
  CommId commId_{};
  std::vector<RankInfo> ranks_;
  Socket next_;  // to rank + 1
  Socket prev_;  // from rank - 1
  uint64_t operations_ = 0;
  std::string broken_;  // why the ring cannot be used any more; empty while it can
};

}  // namespace weft
