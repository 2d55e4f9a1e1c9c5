// Reduction operators made at run time (weftRedOpCreatePreMulSum): numbered from weftNumOps
// upward, per communicator, valid for one datatype.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "include/weft.h"

namespace weft {

struct PreMulSumOp {
  weftDataType_t datatype;
  weftScalarResidence_t residence;
  std::array<uint8_t, 8> value{};  // HostImmediate: the scalar, read at creation
  const void* pointer = nullptr;   // Device: read each time a collective uses the operator

  // The scalar to multiply by now.
  const void* scalar() const { return residence == weftScalarHostImmediate ? value.data() : pointer; }
};

class RedOpTable {
 public:
  weftRedOp_t createPreMulSum(const void* scalar, weftDataType_t datatype,
                              weftScalarResidence_t residence);
  // Throws weftInvalidArgument when `op` is not an operator of this table.
  void destroy(weftRedOp_t op);
  std::optional<PreMulSumOp> find(weftRedOp_t op) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::optional<PreMulSumOp>> ops_;  // index = op - weftNumOps
};

}  // namespace weft
