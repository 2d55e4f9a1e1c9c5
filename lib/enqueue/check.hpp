// WEFT_CHECK=1: before an operation runs, every rank sends every other what it was asked to do
// (collective, count, datatype, operator, root, sequence number) and all compare; a mismatch is
// weftInvalidUsage naming the ranks and what each called, where it would otherwise hang or
// silently corrupt data.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/executor.hpp"
#include "lib/enqueue/operation.hpp"

namespace weft {

class Comm;

class ConsistencyCheck {
 public:
  // `collectives`: the collective operations of one launch on `comm`, in order, with their
  // sequence numbers (the first one's names the check's messages).
  ConsistencyCheck(Comm& comm, const std::vector<Operation>& collectives,
                   const std::vector<uint64_t>& seqs);
  ~ConsistencyCheck();

  // The exchange (a ring allgather of one fixed-size record per rank) to run to completion.
  Execution& execution() { return *execution_; }
  // Throws weftInvalidUsage when the ranks' records differ.
  void verify() const;

  static constexpr size_t kRecordBytes = 64;

 private:
  Comm& comm_;
  std::array<uint8_t, kRecordBytes> mine_{};
  std::vector<uint8_t> all_;
  Schedule schedule_;
  std::unique_ptr<Execution> execution_;
};

}  // namespace weft
