// n communicators over the loopback transport, driven from one thread through groups (as NCCL
// lets one thread drive several ranks). Runs the real launch path: operator planning, the
// tuner, schedule caching, tags, the executor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/bootstrap/bootstrap.hpp"
#include "lib/comm/comm.hpp"
#include "lib/enqueue/group.hpp"
#include "support/collective_case.hpp"
#include "transports/loopback/loopback.hpp"

namespace weft::testing {

struct LoopbackWorld {
  std::vector<std::shared_ptr<Comm>> comms;

  explicit LoopbackWorld(int n, uint64_t chunkBytes = 0) {
    auto transports = createLoopbackTransports(n);
    CommConfig config;
    config.timeoutMs = 60000;
    for (int r = 0; r < n; ++r) {
      comms.push_back(
          std::make_shared<Comm>(r, n, config, std::move(transports[r]), nullptr));
      comms.back()->overrides().chunkBytes = chunkBytes;
    }
  }
  int size() const { return static_cast<int>(comms.size()); }

  // Runs one operation per rank (ops[r] on rank r) as a group.
  void run(const std::vector<Operation>& ops) {
    groupStart();
    for (int r = 0; r < size(); ++r) submit({comms[r], ops[r], nullptr});
    groupEnd();
  }
};

// The operation a rank submits for a case, on the buffers prepare() laid out.
inline Operation caseOperation(const CaseShape& shape, const RankBuffers& buffers) {
  Operation o;
  o.collective = shape.collective;
  o.sendbuff = buffers.sendbuff;
  o.recvbuff = buffers.recvbuff;
  o.count = shape.count;
  o.datatype = shape.type;
  o.root = shape.root;
  o.op = static_cast<weftRedOp_t>(shape.op);
  return o;
}

// Runs one case on every rank of the world (built-in operators) and checks every rank's output.
// Returns the first rank whose output is wrong, or rank -1.
struct CaseOutcome {
  int rank = -1;
  uint64_t wrong = 0;
  std::string first;  // the first wrong element, described
};

inline CaseOutcome runCase(LoopbackWorld& world, std::vector<RankBuffers>& buffers,
                           const CaseShape& shape, bool inPlace, const CaseInputs& inputs) {
  const int n = world.size();
  std::vector<Operation> ops(n);
  for (int r = 0; r < n; ++r) {
    buffers[r].prepare(shape, r, inPlace, inputs);
    ops[r] = caseOperation(shape, buffers[r]);
  }
  world.run(ops);
  CaseOutcome outcome;
  for (int r = 0; r < n && outcome.rank < 0; ++r) {
    outcome.wrong = buffers[r].check(shape, r, inputs, outcome.first);
    if (outcome.wrong) outcome.rank = r;
  }
  return outcome;
}

}  // namespace weft::testing
