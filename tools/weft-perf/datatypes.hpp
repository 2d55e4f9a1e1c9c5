// Element types and reduction operators as weft-perf names them (nccl-tests' names).
#pragma once

#include <weft.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace weft::perf {

struct DatatypeInfo {
  weftDataType_t type;
  std::string_view name;
  size_t size;
  bool floating;
};

inline constexpr std::array<DatatypeInfo, 12> kDatatypes = {{
    {weftInt8, "int8", 1, false},
    {weftUint8, "uint8", 1, false},
    {weftInt32, "int32", 4, false},
    {weftUint32, "uint32", 4, false},
    {weftInt64, "int64", 8, false},
    {weftUint64, "uint64", 8, false},
    {weftFloat16, "half", 2, true},
    {weftFloat32, "float", 4, true},
    {weftFloat64, "double", 8, true},
    {weftBfloat16, "bfloat16", 2, true},
    {weftFloat8e4m3, "f8e4m3", 1, true},
    {weftFloat8e5m2, "f8e5m2", 1, true},
}};

// The entry of a valid datatype (kDatatypes is indexed by the enum's value).
constexpr const DatatypeInfo& datatypeInfo(weftDataType_t type) {
  return kDatatypes[static_cast<size_t>(type)];
}

// nccl-tests' names plus the common aliases (char, int, fp16, float16, float32, fp32, float64,
// fp64, bf16, e4m3, e5m2, fp8_e4m3, fp8_e5m2).
std::optional<weftDataType_t> parseDatatype(std::string_view name);

// The operators weft-perf runs. PreMulSum is a sum of inputs each multiplied by a scalar (2 here),
// made with weftRedOpCreatePreMulSum.
enum class ReduceOp { Sum, Prod, Max, Min, Avg, PreMulSum };

inline constexpr std::array<ReduceOp, 6> kReduceOps = {ReduceOp::Sum, ReduceOp::Prod,
                                                       ReduceOp::Max, ReduceOp::Min,
                                                       ReduceOp::Avg, ReduceOp::PreMulSum};

constexpr std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::PreMulSum: return "premulsum";
  }
  return "?";
}

// The redop column's text: the names above except premulsum, printed "mulsum" as nccl-tests
// prints it (it fits the 6-character column).
constexpr std::string_view reduceOpLabel(ReduceOp op) {
  return op == ReduceOp::PreMulSum ? "mulsum" : reduceOpName(op);
}

// The names above; "mulsum" (nccl-tests' name) is accepted for premulsum.
std::optional<ReduceOp> parseReduceOp(std::string_view name);

}  // namespace weft::perf
