#include "baseline_mpi.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <weft_mpi.h>

#include <cstdio>
#include <cstdlib>

#include "bench.hpp"

namespace weft::perf {
namespace {

// MPI's datatype for a weft one; MPI_DATATYPE_NULL when MPI has none.
MPI_Datatype mpiType(weftDataType_t t) {
  switch (t) {
    case weftInt8: return MPI_INT8_T;
    case weftUint8: return MPI_UINT8_T;
    case weftInt32: return MPI_INT32_T;
    case weftUint32: return MPI_UINT32_T;
    case weftInt64: return MPI_INT64_T;
    case weftUint64: return MPI_UINT64_T;
    case weftFloat32: return MPI_FLOAT;
    case weftFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpiOp(weftRedOp_t op) {
  switch (op) {
    case weftSum: return MPI_SUM;
    case weftProd: return MPI_PROD;
    case weftMax: return MPI_MAX;
    case weftMin: return MPI_MIN;
    default: return MPI_OP_NULL;  // avg, pre-multiplied sums
  }
}

void ensureMpi(int rc, const char* function) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  std::fflush(stdout);
  fmt::print(stderr, "weft-perf: {} failed: {}\n", function, std::string(text, length));
  std::_Exit(1);
}

class MpiBaseline final : public Baseline {
 public:
  const char* name() const override { return "mpi"; }

  bool supports(const Call& c) const override {
    if (mpiType(c.datatype) == MPI_DATATYPE_NULL) return false;
    return !isReducing(c.collective) || mpiOp(c.op) != MPI_OP_NULL;
  }

  void run(const Call& c, int times) const override {
    const MPI_Datatype t = mpiType(c.datatype);
    const int n = static_cast<int>(c.count);
    void* send = const_cast<void*>(c.sendbuff);
    for (int i = 0; i < times; ++i) {
      switch (c.collective) {
        case Collective::AllReduce:
          ensureMpi(MPI_Allreduce(send, c.recvbuff, n, t, mpiOp(c.op), MPI_COMM_WORLD),
                    "MPI_Allreduce");
          break;
        case Collective::AllGather:
          ensureMpi(MPI_Allgather(send, n, t, c.recvbuff, n, t, MPI_COMM_WORLD), "MPI_Allgather");
          break;
        case Collective::ReduceScatter:
          ensureMpi(MPI_Reduce_scatter_block(send, c.recvbuff, n, t, mpiOp(c.op), MPI_COMM_WORLD),
                    "MPI_Reduce_scatter_block");
          break;
        case Collective::Broadcast:
          // One buffer: the root's send buffer is the source, everyone else's receive buffer.
          ensureMpi(MPI_Bcast(c.rank == c.root ? send : c.recvbuff, n, t, c.root, MPI_COMM_WORLD),
                    "MPI_Bcast");
          break;
        case Collective::Reduce:
          ensureMpi(MPI_Reduce(send, c.recvbuff, n, t, mpiOp(c.op), c.root, MPI_COMM_WORLD),
                    "MPI_Reduce");
          break;
        case Collective::AlltoAll:
          ensureMpi(MPI_Alltoall(send, n, t, c.recvbuff, n, t, MPI_COMM_WORLD), "MPI_Alltoall");
          break;
        case Collective::Gather:
          ensureMpi(MPI_Gather(send, n, t, c.recvbuff, n, t, c.root, MPI_COMM_WORLD),
                    "MPI_Gather");
          break;
        case Collective::Scatter:
          ensureMpi(MPI_Scatter(send, n, t, c.recvbuff, n, t, c.root, MPI_COMM_WORLD),
                    "MPI_Scatter");
          break;
        case Collective::SendRecv: {
          const int next = (c.rank + 1) % c.nranks, prev = (c.rank - 1 + c.nranks) % c.nranks;
          ensureMpi(MPI_Sendrecv(send, n, t, next, 0, c.recvbuff, n, t, prev, 0, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE),
                    "MPI_Sendrecv");
          break;
        }
      }
    }
  }
};

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  ensureMpi(MPI_Init(argc, argv), "MPI_Init");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

weftComm_t MpiSession::weftComm() const {
  weftComm_t comm = nullptr;
  RankSetup early;
  early.rank = rank_;
  ensure(early, weftCommInitFromMPI(MPI_COMM_WORLD, &comm, nullptr), "weftCommInitFromMPI");
  return comm;
}

std::unique_ptr<Baseline> makeMpiBaseline() { return std::make_unique<MpiBaseline>(); }

}  // namespace weft::perf
