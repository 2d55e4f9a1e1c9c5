#include "lib/enqueue/operation.hpp"

#include <fmt/format.h>

#include "algorithms/reduce/datatype.hpp"

namespace weft {

uint64_t sendElements(const Operation& op, int rank, int nranks) {
  const uint64_t c = op.count, n = nranks;
  const bool root = rank == op.root;
  switch (op.collective) {
    case Collective::AllReduce:
    case Collective::Reduce:
    case Collective::AllGather:
    case Collective::Gather:
    case Collective::Send: return c;
    case Collective::Broadcast: return root ? c : 0;
    case Collective::ReduceScatter:
    case Collective::AlltoAll: return n * c;
    case Collective::Scatter: return root ? n * c : 0;
    case Collective::Recv: return 0;
  }
  return 0;
}

uint64_t recvElements(const Operation& op, int rank, int nranks) {
  const uint64_t c = op.count, n = nranks;
  const bool root = rank == op.root;
  switch (op.collective) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::ReduceScatter:
    case Collective::Scatter:
    case Collective::Recv: return c;
    case Collective::Reduce: return root ? c : 0;
    case Collective::AllGather:
    case Collective::AlltoAll: return n * c;
    case Collective::Gather: return root ? n * c : 0;
    case Collective::Send: return 0;
  }
  return 0;
}

bool isInPlace(const Operation& op, int rank, int nranks) {
  const auto* send = static_cast<const uint8_t*>(op.sendbuff);
  const auto* recv = static_cast<const uint8_t*>(op.recvbuff);
  const uint64_t block = op.count * datatypeSize(op.datatype);
  const bool root = rank == op.root;
  (void)nranks;
  switch (op.collective) {
    case Collective::AllReduce:
    case Collective::AlltoAll: return send == recv;
    case Collective::Broadcast:
    case Collective::Reduce: return root && send == recv;
    case Collective::AllGather: return send == recv + rank * block;
    case Collective::ReduceScatter: return recv == send + rank * block;
    case Collective::Gather: return root && send == recv + op.root * block;
    case Collective::Scatter: return root && recv == send + op.root * block;
    case Collective::Send:
    case Collective::Recv: return false;
  }
  return false;
}

std::string describe(const Operation& op) {
  static constexpr const char* kOps[] = {"sum", "prod", "max", "min", "avg"};
  const char* type = datatypeName(op.datatype);
  switch (op.collective) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
      return fmt::format("{}(count={}, {}, {})", collectiveName(op.collective), op.count, type,
                         op.op < weftNumOps ? kOps[op.op] : "premulsum");
    case Collective::Reduce:
      return fmt::format("Reduce(count={}, {}, {}, root={})", op.count, type,
                         op.op < weftNumOps ? kOps[op.op] : "premulsum", op.root);
    case Collective::Send:
    case Collective::Recv:
      return fmt::format("{}(count={}, {}, peer={})", collectiveName(op.collective), op.count, type,
                         op.root);
    case Collective::Broadcast:
    case Collective::Gather:
    case Collective::Scatter:
      return fmt::format("{}(count={}, {}, root={})", collectiveName(op.collective), op.count, type,
                         op.root);
    default:
      return fmt::format("{}(count={}, {})", collectiveName(op.collective), op.count, type);
  }
}

}  // namespace weft
