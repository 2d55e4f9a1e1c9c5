#include "types.hpp"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace weft_torch {
namespace {

struct DtypeRow {
  at::ScalarType type;
  weftDataType_t weft;
  bool complex;
};

constexpr DtypeRow kDtypes[] = {
    {at::kChar, weftInt8, false},
    {at::kByte, weftUint8, false},
    {at::kBool, weftUint8, false},
    {at::kInt, weftInt32, false},
    {at::kLong, weftInt64, false},
    {at::kHalf, weftFloat16, false},
    {at::kBFloat16, weftBfloat16, false},
    {at::kFloat, weftFloat32, false},
    {at::kDouble, weftFloat64, false},
    {at::kComplexFloat, weftFloat32, true},
    {at::kComplexDouble, weftFloat64, true},
};

const char* opName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

// The pre-multiplication factor of a PREMUL_SUM (torch.distributed._make_nccl_premul_sum).
double premulFactor(const c10d::ReduceOp& op) {
  const auto* supplement = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(supplement != nullptr, "weft: PREMUL_SUM without its factor");
  if (!supplement->tensor_factors.empty())
    return supplement->tensor_factors.front().to(at::kCPU).item<double>();
  return supplement->double_factor;
}

}  // namespace

WeftView weftView(const at::Tensor& tensor, const char* what) {
  TORCH_CHECK(tensor.device().is_cpu(), "weft: ", what, " must be a CPU tensor, not ",
              tensor.device());
  TORCH_CHECK(tensor.layout() == at::kStrided, "weft: ", what, " must be dense (strided)");
  TORCH_CHECK(tensor.is_contiguous(), "weft: ", what, " must be contiguous");
  for (const DtypeRow& row : kDtypes) {
    if (row.type != tensor.scalar_type()) continue;
    WeftView view;
    view.datatype = row.weft;
    view.complex = row.complex;
    view.boolean = row.type == at::kBool;
    view.count = static_cast<size_t>(tensor.numel()) * (row.complex ? 2 : 1);
    return view;
  }
  TORCH_CHECK(false, "weft: ", what, " has dtype ", tensor.scalar_type(),
              ", which weft does not support (supported: int8, uint8, bool, int32, int64, "
              "float16, bfloat16, float32, float64, complex64, complex128)");
}

WeftOp weftOp(const c10d::ReduceOp& op, const WeftView& view, weftComm_t comm) {
  const c10d::ReduceOp::RedOpType type = op.op_;
  if (view.boolean) {
    // NCCL's convention: for booleans, sum is "any" and product is "all".
    switch (type) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::MAX: return {weftMax, false};
      case c10d::ReduceOp::PRODUCT:
      case c10d::ReduceOp::MIN: return {weftMin, false};
      default: TORCH_CHECK(false, "weft: ReduceOp.", opName(type), " is not defined for bool");
    }
  }
  if (view.complex)
    TORCH_CHECK(type == c10d::ReduceOp::SUM || type == c10d::ReduceOp::AVG ||
                    type == c10d::ReduceOp::PREMUL_SUM,
                "weft: ReduceOp.", opName(type),
                " is not defined for complex tensors (SUM, AVG and PREMUL_SUM are)");
  switch (type) {
    case c10d::ReduceOp::SUM: return {weftSum, false};
    case c10d::ReduceOp::AVG: return {weftAvg, false};
    case c10d::ReduceOp::PRODUCT: return {weftProd, false};
    case c10d::ReduceOp::MIN: return {weftMin, false};
    case c10d::ReduceOp::MAX: return {weftMax, false};
    case c10d::ReduceOp::PREMUL_SUM: {
      const double factor = premulFactor(op);
      // The scalar in the tensor's own type, read before the create call returns.
      union {
        int8_t i8;
        uint8_t u8;
        int32_t i32;
        int64_t i64;
        uint16_t bits16;
        float f32;
        double f64;
      } scalar{};
      switch (view.datatype) {
        case weftInt8: scalar.i8 = static_cast<int8_t>(factor); break;
        case weftUint8: scalar.u8 = static_cast<uint8_t>(factor); break;
        case weftInt32: scalar.i32 = static_cast<int32_t>(factor); break;
        case weftInt64: scalar.i64 = static_cast<int64_t>(factor); break;
        case weftFloat16: scalar.bits16 = c10::Half(static_cast<float>(factor)).x; break;
        case weftBfloat16: scalar.bits16 = c10::BFloat16(static_cast<float>(factor)).x; break;
        case weftFloat32: scalar.f32 = static_cast<float>(factor); break;
        default: scalar.f64 = factor; break;
      }
      WeftOp out;
      const weftResult_t r =
          weftRedOpCreatePreMulSum(&out.op, &scalar, view.datatype, weftScalarHostImmediate, comm);
      TORCH_CHECK(r == weftSuccess,
                  "weft: weftRedOpCreatePreMulSum failed: ", weftGetErrorString(r), ": ",
                  weftGetLastError(comm));
      out.created = true;
      return out;
    }
    default:
      TORCH_CHECK(false, "weft: ReduceOp.", opName(type),
                  " is not supported (weft reduces with SUM, AVG, PRODUCT, MIN, MAX and "
                  "PREMUL_SUM)");
  }
}

std::vector<std::string> supportedDtypeNames() {
  std::vector<std::string> names;
  for (const DtypeRow& row : kDtypes) names.push_back(c10::toString(row.type));
  return names;
}

}  // namespace weft_torch
