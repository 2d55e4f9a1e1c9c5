// weft-perf's own conversions of the floating datatypes, so that expected values never come
// from the library under test. Encoders round to nearest even, from double in one step.
// Overflow: half and bfloat16 go to infinity (IEEE); the fp8 formats saturate to their largest
// finite value, infinities included (as weft and NVIDIA's __NV_SATFINITE do). NaN encodes as a
// quiet NaN (half 0x7e00, bfloat16 0x7fc0, fp8 0x7f) with the input's sign.
#pragma once

#include <weft.h>

#include <cstdint>

namespace weft::perf {

uint16_t encodeHalf(double value);
double decodeHalf(uint16_t bits);
uint16_t encodeBfloat16(double value);
double decodeBfloat16(uint16_t bits);
uint8_t encodeFp8e4m3(double value);  // OCP E4M3 ("fn"): no infinity, NaN only S.1111.111
double decodeFp8e4m3(uint8_t bits);
uint8_t encodeFp8e5m2(double value);  // OCP E5M2: IEEE-like, with infinities
double decodeFp8e5m2(uint8_t bits);

// Any floating datatype, the bits in the low bytes of a uint64_t (little-endian memory order).
uint64_t encodeFloating(weftDataType_t type, double value);
double decodeFloating(weftDataType_t type, uint64_t bits);

// Half a unit in the last place relative to 1 (2^-(mantissa bits + 1)): the largest relative
// error of one rounding to nearest.
double unitRoundoff(weftDataType_t type);
// The smallest positive subnormal value.
double smallestSubnormal(weftDataType_t type);

}  // namespace weft::perf
