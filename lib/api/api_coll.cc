// Collectives, point to point and groups: argument checks, then the launch layer.
#include "algorithms/reduce/datatype.hpp"
#include "lib/api/handles.hpp"
#include "lib/comm/comm.hpp"
#include "lib/enqueue/group.hpp"
#include "lib/enqueue/reduction.hpp"

using namespace weft;

namespace {

// Every check that needs no peer: buffers, datatype, operator, root or peer, sizes, overlap.
void validate(const Operation& op, Comm& comm) {
  const int n = comm.nranks(), rank = comm.rank();
  if (!isValidDatatype(op.datatype))
    fail(weftInvalidArgument, "datatype={}: not a weftDataType_t (0..{})",
         static_cast<int>(op.datatype), weftNumTypes - 1);
  if (isRooted(op.collective) && (op.root < 0 || op.root >= n))
    fail(weftInvalidArgument, "root={}: must be in [0, nranks={})", op.root, n);
  if ((op.collective == Collective::Send || op.collective == Collective::Recv) &&
      (op.root < 0 || op.root >= n))
    fail(weftInvalidArgument, "peer={}: must be in [0, nranks={})", op.root, n);
  if (isReducing(op.collective)) {
    if (static_cast<int>(op.op) < 0)
      fail(weftInvalidArgument, "op={}: not a reduction operator", static_cast<int>(op.op));
    (void)planReduction(op.op, op.datatype, n, comm.redOps());
  }
  const uint64_t es = datatypeSize(op.datatype);
  if (op.count > (uint64_t{1} << 62) / es / static_cast<uint64_t>(n))
    fail(weftInvalidArgument, "count={}: too large for {} ranks of {}", op.count, n,
         datatypeName(op.datatype));
  if (op.count == 0) return;
  const uint64_t sendBytes = sendElements(op, rank, n) * es;
  const uint64_t recvBytes = recvElements(op, rank, n) * es;
  if (sendBytes > 0 && op.sendbuff == nullptr)
    fail(weftInvalidArgument, "sendbuff is NULL (rank {} sends {} bytes)", rank, sendBytes);
  if (recvBytes > 0 && op.recvbuff == nullptr)
    fail(weftInvalidArgument, "recvbuff is NULL (rank {} receives {} bytes)", rank, recvBytes);
  if (sendBytes > 0 && recvBytes > 0 && !isInPlace(op, rank, n)) {
    const auto s = reinterpret_cast<uintptr_t>(op.sendbuff);
    const auto r = reinterpret_cast<uintptr_t>(op.recvbuff);
    if (s < r + recvBytes && r < s + sendBytes)
      fail(weftInvalidArgument,
           "sendbuff and recvbuff overlap but are not in the in-place form of {} (see weft.h)",
           collectiveName(op.collective));
  }
}

weftResult_t submitChecked(const char* function, weftComm_t comm, weftStream_t stream,
                           const Operation& op) {
  return api::guard(function, comm, [&] {
    try {
      std::shared_ptr<Comm> c = api::readyComm(comm);
      std::shared_ptr<weftStream> s = api::lookupStream(stream);
      validate(op, *c);
      submit({std::move(c), op, s ? std::shared_ptr<HostStream>(s, &s->impl) : nullptr});
    } catch (const Error& e) {
      poisonGroup(e);
      throw;
    }
  });
}

Operation make(Collective collective, const void* sendbuff, void* recvbuff, size_t count,
               weftDataType_t datatype, weftRedOp_t op, int root) {
  Operation o;
  o.collective = collective;
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.datatype = datatype;
  o.op = op;
  o.root = root;
  return o;
}

}  // namespace

extern "C" {

weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                           weftStream_t stream) {
  return submitChecked("weftAllReduce", comm, stream,
                       make(Collective::AllReduce, sendbuff, recvbuff, count, datatype, op, 0));
}

weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           weftDataType_t datatype, int root, weftComm_t comm,
                           weftStream_t stream) {
  return submitChecked(
      "weftBroadcast", comm, stream,
      make(Collective::Broadcast, sendbuff, recvbuff, count, datatype, weftSum, root));
}

weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count,
                        weftDataType_t datatype, weftRedOp_t op, int root, weftComm_t comm,
                        weftStream_t stream) {
  return submitChecked("weftReduce", comm, stream,
                       make(Collective::Reduce, sendbuff, recvbuff, count, datatype, op, root));
}

weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           weftDataType_t datatype, weftComm_t comm, weftStream_t stream) {
  return submitChecked(
      "weftAllGather", comm, stream,
      make(Collective::AllGather, sendbuff, recvbuff, sendcount, datatype, weftSum, 0));
}

weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                               weftStream_t stream) {
  return submitChecked(
      "weftReduceScatter", comm, stream,
      make(Collective::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0));
}

weftResult_t weftAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          weftDataType_t datatype, weftComm_t comm, weftStream_t stream) {
  return submitChecked("weftAlltoAll", comm, stream,
                       make(Collective::AlltoAll, sendbuff, recvbuff, count, datatype, weftSum, 0));
}

weftResult_t weftGather(const void* sendbuff, void* recvbuff, size_t count,
                        weftDataType_t datatype, int root, weftComm_t comm, weftStream_t stream) {
  return submitChecked("weftGather", comm, stream,
                       make(Collective::Gather, sendbuff, recvbuff, count, datatype, weftSum, root));
}

weftResult_t weftScatter(const void* sendbuff, void* recvbuff, size_t count,
                         weftDataType_t datatype, int root, weftComm_t comm, weftStream_t stream) {
  return submitChecked(
      "weftScatter", comm, stream,
      make(Collective::Scatter, sendbuff, recvbuff, count, datatype, weftSum, root));
}

weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype, int peer,
                      weftComm_t comm, weftStream_t stream) {
  return submitChecked("weftSend", comm, stream,
                       make(Collective::Send, sendbuff, nullptr, count, datatype, weftSum, peer));
}

weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer,
                      weftComm_t comm, weftStream_t stream) {
  return submitChecked("weftRecv", comm, stream,
                       make(Collective::Recv, nullptr, recvbuff, count, datatype, weftSum, peer));
}

weftResult_t weftGroupStart(void) {
  return api::guard("weftGroupStart", nullptr, [] { groupStart(); });
}

weftResult_t weftGroupEnd(void) {
  return api::guard("weftGroupEnd", nullptr, [] { groupEnd(); });
}

}  // extern "C"
