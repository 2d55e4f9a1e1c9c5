#include "collectives.hpp"

namespace weft::perf {

CallResult issue(const Call& c, weftComm_t comm, weftStream_t stream) {
  const auto done = [](weftResult_t result, const char* function) {
    return CallResult{result, result == weftSuccess ? "" : function};
  };
  switch (c.collective) {
    case Collective::AllReduce:
      return done(weftAllReduce(c.sendbuff, c.recvbuff, c.count, c.datatype, c.op, comm, stream),
                  "weftAllReduce");
    case Collective::AllGather:
      return done(weftAllGather(c.sendbuff, c.recvbuff, c.count, c.datatype, comm, stream),
                  "weftAllGather");
    case Collective::ReduceScatter:
      return done(
          weftReduceScatter(c.sendbuff, c.recvbuff, c.count, c.datatype, c.op, comm, stream),
          "weftReduceScatter");
    case Collective::Broadcast:
      return done(weftBroadcast(c.sendbuff, c.recvbuff, c.count, c.datatype, c.root, comm, stream),
                  "weftBroadcast");
    case Collective::Reduce:
      return done(
          weftReduce(c.sendbuff, c.recvbuff, c.count, c.datatype, c.op, c.root, comm, stream),
          "weftReduce");
    case Collective::AlltoAll:
      return done(weftAlltoAll(c.sendbuff, c.recvbuff, c.count, c.datatype, comm, stream),
                  "weftAlltoAll");
    case Collective::Gather:
      return done(weftGather(c.sendbuff, c.recvbuff, c.count, c.datatype, c.root, comm, stream),
                  "weftGather");
    case Collective::Scatter:
      return done(weftScatter(c.sendbuff, c.recvbuff, c.count, c.datatype, c.root, comm, stream),
                  "weftScatter");
    case Collective::SendRecv: {
      const int next = (c.rank + 1) % c.nranks;
      const int prev = (c.rank - 1 + c.nranks) % c.nranks;
      weftResult_t r = weftGroupStart();
      if (r != weftSuccess) return done(r, "weftGroupStart");
      // After a failed send or receive the group is still closed (weft then launches nothing),
      // so that this thread is not left inside a group.
      const weftResult_t s = weftSend(c.sendbuff, c.count, c.datatype, next, comm, stream);
      const weftResult_t v =
          s == weftSuccess ? weftRecv(c.recvbuff, c.count, c.datatype, prev, comm, stream) : s;
      r = weftGroupEnd();
      if (s != weftSuccess) return done(s, "weftSend");
      if (v != weftSuccess) return done(v, "weftRecv");
      return done(r, "weftGroupEnd");
    }
  }
  return done(weftInvalidArgument, "issue");
}

}  // namespace weft::perf
