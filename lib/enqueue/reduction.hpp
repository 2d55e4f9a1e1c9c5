// How an operator becomes arithmetic: a binary kernel, plus an optional scaling of every input
// before it (pre-multiplied sum; floating-point average, as NCCL computes it) and an optional
// division of the result after it (integer average).
#pragma once

#include <array>
#include <cstdint>

#include "algorithms/reduce/reduce.hpp"
#include "include/weft.h"

namespace weft {

class RedOpTable;

struct ReductionPlan {
  ReduceFn kernel = nullptr;
  ReduceManyFn many = nullptr;  // the same operation over several sources in one pass
  bool prescale = false;
  std::array<uint8_t, 8> scalar{};  // one element of the datatype
  int postDivide = 0;               // 0: none
};

// Throws weftInvalidArgument for an operator that is neither built in nor in `table`, or that was
// created for another datatype.
ReductionPlan planReduction(weftRedOp_t op, weftDataType_t datatype, int nranks,
                            const RedOpTable& table);

}  // namespace weft
