#include "lib/enqueue/reduction.hpp"

#include <cstring>

#include "algorithms/reduce/datatype.hpp"
#include "lib/base/error.hpp"
#include "lib/comm/redop.hpp"

namespace weft {

ReductionPlan planReduction(weftRedOp_t op, weftDataType_t datatype, int nranks,
                            const RedOpTable& table) {
  ReductionPlan plan;
  switch (op) {
    case weftSum: plan.kernel = reduceKernel(datatype, ReduceKind::Sum); return plan;
    case weftProd: plan.kernel = reduceKernel(datatype, ReduceKind::Prod); return plan;
    case weftMax: plan.kernel = reduceKernel(datatype, ReduceKind::Max); return plan;
    case weftMin: plan.kernel = reduceKernel(datatype, ReduceKind::Min); return plan;
    case weftAvg:
      plan.kernel = reduceKernel(datatype, ReduceKind::Sum);
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
  plan.kernel = reduceKernel(datatype, ReduceKind::Sum);
  plan.prescale = true;
  std::memcpy(plan.scalar.data(), custom->scalar(), datatypeSize(datatype));
  return plan;
}

}  // namespace weft
