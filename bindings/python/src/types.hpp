// How torch's tensors and reduction operators map onto weft's C API.
#pragma once

#include <ATen/ATen.h>
#include <weft.h>

#include <cstdint>
#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <vector>

namespace weft_torch {

// A tensor as weft sees it: the datatype and the number of its elements. Complex tensors are
// pairs of their real type (sums only); bool is uint8 (sum becomes max, product min, as NCCL's
// backend does). Throws c10::Error naming the dtype when weft has no such type (int16,
// quantised types) and when the tensor is not a dense, contiguous CPU tensor.
struct WeftView {
  weftDataType_t datatype = weftFloat32;
  size_t count = 0;
  bool complex = false;
  bool boolean = false;
};
WeftView weftView(const at::Tensor& tensor, const char* what);

// A reduction operator for `view`, created on `comm` when it needs to be (PREMUL_SUM): then
// `created` is true and the caller destroys it with weftRedOpDestroy once the operation is done.
struct WeftOp {
  weftRedOp_t op = weftSum;
  bool created = false;
};
WeftOp weftOp(const c10d::ReduceOp& op, const WeftView& view, weftComm_t comm);

// The dtypes weft_torch supports, by name (tests and the error messages).
std::vector<std::string> supportedDtypeNames();

}  // namespace weft_torch
