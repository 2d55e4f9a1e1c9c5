// A peer library's collective, timed on the same buffers as weft's (--baseline): the interface
// bench.cc drives, so that weft-perf itself needs no MPI. baseline_mpi.cc implements it for
// weft-perf-mpi.
#pragma once

#include "collectives.hpp"

namespace weft::perf {

class Baseline {
 public:
  virtual ~Baseline() = default;
  virtual const char* name() const = 0;  // the column header: "mpi"
  // Whether the peer has this collective, datatype and operator (MPI has no half, bfloat16,
  // fp8, avg or pre-multiplied sum).
  virtual bool supports(const Call& call) const = 0;
  // `times` blocking calls of the peer's equivalent of `call`, on the call's buffers.
  virtual void run(const Call& call, int times) const = 0;
};

}  // namespace weft::perf
