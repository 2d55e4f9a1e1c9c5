// Pieces shared by the backend's source files: weft's text for a failed call, and the checks
// and views of tensor arguments every operation makes.
#pragma once

#include <ATen/ATen.h>
#include <weft.h>

#include <string>
#include <vector>

namespace weft_torch {

// "weft: <function> failed: <result>: <weftGetLastError>".
inline std::string weftMessage(weftResult_t result, weftComm_t comm, const char* function) {
  std::string last = weftGetLastError(comm);
  if (last.empty()) last = weftGetLastError(nullptr);
  return std::string("weft: ") + function + " failed: " + weftGetErrorString(result) + ": " + last;
}

inline void* data(const at::Tensor& t) {
  return t.data_ptr();
}

// One flat tensor holding `tensors` back to back (they share `like`'s dtype and size).
inline at::Tensor flatLike(const at::Tensor& like, size_t copies) {
  return at::empty({static_cast<int64_t>(copies) * like.numel()}, like.options());
}

inline void checkSameShape(const at::Tensor& a, const at::Tensor& b, const char* what) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "weft: ", what, ": dtypes differ (",
              a.scalar_type(), " and ", b.scalar_type(), ")");
  TORCH_CHECK(a.numel() == b.numel(), "weft: ", what, ": sizes differ (", a.numel(), " and ",
              b.numel(), " elements)");
}

inline const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "weft: ", what, " takes one tensor per process, not ",
              tensors.size());
  return tensors.front();
}

}  // namespace weft_torch
