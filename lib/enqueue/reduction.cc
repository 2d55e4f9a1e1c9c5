#include "lib/enqueue/reduction.hpp"

#include <cstring>

#include "algorithms/reduce/datatype.hpp"
#include "lib/base/error.hpp"
#include "lib/comm/redop.hpp"

namespace weft {

ReductionPlan planReduction(weftRedOp_t op, weftDataType_t datatype, int nranks,
                            const RedOpTable& table) {
  ReductionPlan plan;
  const auto kernels = [&](ReduceKind kind) {
    plan.kernel = reduceKernel(datatype, kind);
    plan.many = reduceManyKernel(datatype, kind);
  };
  switch (op) {
    case weftSum: kernels(ReduceKind::Sum); return plan;
    case weftProd: kernels(ReduceKind::Prod); return plan;
    case weftMax: kernels(ReduceKind::Max); return plan;
    case weftMin: kernels(ReduceKind::Min); return plan;
    case weftAvg:
      kernels(ReduceKind::Sum);
      if (isFloatingPoint(datatype)) {
        plan.prescale = true;
        reciprocal(plan.scalar.data(), datatype, nranks);
      } else {
        plan.postDivide = nranks;
      }
      return plan;
    default: break;
  }
  const auto custom = table.find(op);
  if (!custom)
    fail(weftInvalidArgument,
         "op={}: not a reduction operator (built-in: 0..4; others must come from "
         "weftRedOpCreatePreMulSum on this communicator and not be destroyed)",
         static_cast<int>(op));
  if (custom->datatype != datatype)
    fail(weftInvalidArgument, "op={} was created for datatype {} but is used with {}",
         static_cast<int>(op), datatypeName(custom->datatype), datatypeName(datatype));
  kernels(ReduceKind::Sum);
  plan.prescale = true;
  std::memcpy(plan.scalar.data(), custom->scalar(), datatypeSize(datatype));
  return plan;
}

}  // namespace weft
