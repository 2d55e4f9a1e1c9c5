// Datatypes: sizes, names, and conversions of the reduced-precision floating types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "include/weft.h"

namespace weft {

bool isValidDatatype(int datatype) noexcept;
// Bytes per element; 0 for an invalid datatype.
size_t datatypeSize(weftDataType_t datatype) noexcept;
// nccl-tests names: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2;
// "invalid" for an invalid datatype.
const char* datatypeName(weftDataType_t datatype) noexcept;
// Parses the names above (also "float32", "fp16", "bf16", ...), in any letter case. nullopt when
// unknown.
std::optional<weftDataType_t> parseDatatype(std::string_view name) noexcept;
bool isFloatingPoint(weftDataType_t datatype) noexcept;

// IEEE binary16, bfloat16 and the OCP fp8 formats. To-narrow conversions round to nearest even.
// half and bfloat16 overflow to infinity (IEEE); fp8 saturates to the largest finite value, and
// so does an infinity (NVIDIA's __NV_SATFINITE, as NCCL's reductions do). NaN stays NaN: half and
// bfloat16 keep its sign and the top of its payload and set the quiet bit; fp8 gives the
// canonical 0x7f, as NVIDIA's conversion does.
float halfToFloat(uint16_t h) noexcept;
uint16_t floatToHalf(float f) noexcept;
float bfloat16ToFloat(uint16_t b) noexcept;
uint16_t floatToBfloat16(float f) noexcept;
float fp8e4m3ToFloat(uint8_t v) noexcept;
uint8_t floatToFp8e4m3(float f) noexcept;
float fp8e5m2ToFloat(uint8_t v) noexcept;
uint8_t floatToFp8e5m2(float f) noexcept;

}  // namespace weft
