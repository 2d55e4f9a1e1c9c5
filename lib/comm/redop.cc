#include "lib/comm/redop.hpp"

#include <cstring>

#include "algorithms/reduce/datatype.hpp"
#include "lib/base/error.hpp"

namespace weft {

weftRedOp_t RedOpTable::createPreMulSum(const void* scalar, weftDataType_t datatype,
                                        weftScalarResidence_t residence) {
  PreMulSumOp op{datatype, residence, {}, nullptr};
  if (residence == weftScalarHostImmediate)
    std::memcpy(op.value.data(), scalar, datatypeSize(datatype));
  else
    op.pointer = scalar;
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!ops_[i]) {
      ops_[i] = op;
      return static_cast<weftRedOp_t>(weftNumOps + i);
    }
  }
  if (weftNumOps + ops_.size() >= static_cast<size_t>(weftMaxRedOp))
    fail(weftInvalidUsage, "too many reduction operators on this communicator");
  ops_.push_back(op);
  return static_cast<weftRedOp_t>(weftNumOps + ops_.size() - 1);
}

void RedOpTable::destroy(weftRedOp_t op) {
  std::lock_guard lock(mutex_);
  const long index = static_cast<long>(op) - weftNumOps;
  if (index < 0 || index >= static_cast<long>(ops_.size()) || !ops_[index])
    fail(weftInvalidArgument,
         "op={}: not a reduction operator created on this communicator (built-in operators "
         "cannot be destroyed)",
         static_cast<int>(op));
  ops_[index].reset();
}

std::optional<PreMulSumOp> RedOpTable::find(weftRedOp_t op) const {
  std::lock_guard lock(mutex_);
  const long index = static_cast<long>(op) - weftNumOps;
  if (index < 0 || index >= static_cast<long>(ops_.size())) return std::nullopt;
  return ops_[index];
}

}  // namespace weft
