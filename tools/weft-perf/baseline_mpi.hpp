// weft-perf-mpi: MPI as the baseline (--baseline mpi), and the MPI side of the program: MPI is
// initialised first, and the weft communicator is made from MPI_COMM_WORLD
// (weftCommInitFromMPI), so ranks, order and hosts are MPI's.
#pragma once

#include <memory>

#include "baseline.hpp"

namespace weft::perf {

// MPI_Init / MPI_Finalize for the program's lifetime.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  // A weft communicator over MPI_COMM_WORLD; the weft-perf error path on failure.
  weftComm_t weftComm() const;

 private:
  int rank_ = 0;
};

std::unique_ptr<Baseline> makeMpiBaseline();

}  // namespace weft::perf
