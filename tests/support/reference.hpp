// Test data whose collective results are known exactly, for every datatype and operator.
//
// Values are small numbers that every datatype represents exactly, chosen per operator so that
// every partial result is exact too (for half, bfloat16 and fp8 as well): then any order of
// reduction gives the same answer and the reference is plain arithmetic here. Integers use
// wide-ranging values and wrap, as the library's integer arithmetic does. The one inexact case
// is floating-point average (inputs are scaled by 1/n before summing, as NCCL does); there only
// one rank contributes to each element and the check allows two units in the last place.
//
// Encoding values into half/bfloat16/fp8 bits uses the library's conversions, which
// tests/unit/reduce checks exhaustively against hand-derived bit patterns.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "algorithms/reduce/datatype.hpp"
#include "include/weft.h"

namespace weft::testing {

// weftRedOp_t values, plus this pseudo-operator for "a pre-multiplied sum made by
// weftRedOpCreatePreMulSum with premulScalar()".
inline constexpr int kPreMulSum = 100;
inline constexpr int kAllOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg, kPreMulSum};
inline constexpr weftDataType_t kAllTypes[] = {
    weftInt8,    weftUint8,   weftInt32,    weftUint32,     weftInt64,     weftUint64,
    weftFloat16, weftFloat32, weftFloat64,  weftBfloat16,   weftFloat8e4m3, weftFloat8e5m2};

inline const char* opName(int op) {
  switch (op) {
    case weftSum: return "sum";
    case weftProd: return "prod";
    case weftMax: return "max";
    case weftMin: return "min";
    case weftAvg: return "avg";
    default: return "premulsum";
  }
}

inline uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline bool isInteger(weftDataType_t t) {
  return t == weftInt8 || t == weftUint8 || t == weftInt32 || t == weftUint32 || t == weftInt64 ||
         t == weftUint64;
}

// Wraps an integer to the datatype's width and signedness.
inline int64_t wrapTo(weftDataType_t t, int64_t v) {
  switch (t) {
    case weftInt8: return static_cast<int8_t>(v);
    case weftUint8: return static_cast<uint8_t>(v);
    case weftInt32: return static_cast<int32_t>(v);
    case weftUint32: return static_cast<uint32_t>(v);
    case weftInt64: return v;
    case weftUint64: return v;  // kept as the same bits
    default: return v;
  }
}

inline void encode(weftDataType_t t, double v, void* dst) {
  switch (t) {
    case weftInt8: { int8_t x = static_cast<int8_t>(static_cast<int64_t>(v)); std::memcpy(dst, &x, 1); return; }
    case weftUint8: { uint8_t x = static_cast<uint8_t>(static_cast<int64_t>(v)); std::memcpy(dst, &x, 1); return; }
    case weftInt32: { int32_t x = static_cast<int32_t>(static_cast<int64_t>(v)); std::memcpy(dst, &x, 4); return; }
    case weftUint32: { uint32_t x = static_cast<uint32_t>(static_cast<int64_t>(v)); std::memcpy(dst, &x, 4); return; }
    case weftInt64: { int64_t x = static_cast<int64_t>(v); std::memcpy(dst, &x, 8); return; }
    case weftUint64: { uint64_t x = v >= 0 ? static_cast<uint64_t>(v) : static_cast<uint64_t>(static_cast<int64_t>(v)); std::memcpy(dst, &x, 8); return; }
    case weftFloat16: { uint16_t x = floatToHalf(static_cast<float>(v)); std::memcpy(dst, &x, 2); return; }
    case weftBfloat16: { uint16_t x = floatToBfloat16(static_cast<float>(v)); std::memcpy(dst, &x, 2); return; }
    case weftFloat8e4m3: { uint8_t x = floatToFp8e4m3(static_cast<float>(v)); std::memcpy(dst, &x, 1); return; }
    case weftFloat8e5m2: { uint8_t x = floatToFp8e5m2(static_cast<float>(v)); std::memcpy(dst, &x, 1); return; }
    case weftFloat32: { float x = static_cast<float>(v); std::memcpy(dst, &x, 4); return; }
    case weftFloat64: std::memcpy(dst, &v, 8); return;
    default: return;
  }
}

// Integers come back as their (wrapped) value; uint64 as its bits reinterpreted as int64.
inline double decode(weftDataType_t t, const void* src) {
  switch (t) {
    case weftInt8: { int8_t x; std::memcpy(&x, src, 1); return x; }
    case weftUint8: { uint8_t x; std::memcpy(&x, src, 1); return x; }
    case weftInt32: { int32_t x; std::memcpy(&x, src, 4); return x; }
    case weftUint32: { uint32_t x; std::memcpy(&x, src, 4); return x; }
    case weftInt64: { int64_t x; std::memcpy(&x, src, 8); return static_cast<double>(x); }
    case weftUint64: { int64_t x; std::memcpy(&x, src, 8); return static_cast<double>(x); }
    case weftFloat16: { uint16_t x; std::memcpy(&x, src, 2); return halfToFloat(x); }
    case weftBfloat16: { uint16_t x; std::memcpy(&x, src, 2); return bfloat16ToFloat(x); }
    case weftFloat8e4m3: { uint8_t x; std::memcpy(&x, src, 1); return fp8e4m3ToFloat(x); }
    case weftFloat8e5m2: { uint8_t x; std::memcpy(&x, src, 1); return fp8e5m2ToFloat(x); }
    case weftFloat32: { float x; std::memcpy(&x, src, 4); return x; }
    case weftFloat64: { double x; std::memcpy(&x, src, 8); return x; }
    default: return NAN;
  }
}

// The scalar of the pre-multiplied sum the tests create: exact in every type.
inline double premulScalar(weftDataType_t t) { return isInteger(t) ? 3 : 2; }

// Rank r's input at element i for operator `op` (the value before encoding).
inline double inputValue(weftDataType_t t, int op, int rank, int nranks, uint64_t i) {
  // A cheap multiplicative hash: the tests call this for every element of every rank.
  const uint64_t h = ((uint64_t(rank) + 1) * 0x9e3779b97f4a7c15ull ^ (i + 1) * 0xc2b2ae3d27d4eb4full ^
                      uint64_t(t) * 0x165667b19e3779f9ull) >> 17;
  if (isInteger(t)) {
    // 64-bit types use values wide enough to carry, 8-bit ones wrap on the first sums.
    const int64_t wide = static_cast<int64_t>(h % 200001) - 100000;
    switch (op) {
      case weftProd: return static_cast<double>(wrapTo(t, 1 + static_cast<int64_t>(h % 3)));
      default: return static_cast<double>(wrapTo(t, wide));
    }
  }
  const int r = rank;
  switch (op) {
    case weftProd: return (r + i) % 5 == 0 ? 2 : ((r + 2 * i) % 7 == 0 ? -1 : 1);
    case weftMax:
    case weftMin: return static_cast<double>(static_cast<int64_t>((r * 5 + i * 3) % 9) - 4);
    case weftAvg: return uint64_t(r) == i % uint64_t(nranks) ? double(int64_t(i % 7) - 3) : 0;
    default: return (r + i) % 4 == 0 ? (i % 2 ? 1 : -1) : 0;  // sum, premulsum
  }
}

// Reduces the ranks' values of one element in rank order with the library's semantics:
// integers wrap (uint64 compares as unsigned bits), floats are exact by construction.
class Accumulator {
 public:
  Accumulator(weftDataType_t t, int op, int nranks) : t_(t), op_(op), n_(nranks) {}

  void add(double v) {
    if (op_ == kPreMulSum) v *= premulScalar(t_);
    if (isInteger(t_)) {
      const int64_t x = wrapTo(t_, static_cast<int64_t>(v));
      const uint64_t u = static_cast<uint64_t>(x);
      if (count_++ == 0) {
        int_ = u;
      } else if (op_ == weftProd) {
        int_ *= u;
      } else if (op_ == weftMax || op_ == weftMin) {
        const bool less = t_ == weftUint64 ? int_ < u
                                           : wrapTo(t_, static_cast<int64_t>(int_)) < x;
        if ((op_ == weftMax) == less) int_ = u;
      } else {
        int_ += u;
      }
      int_ = static_cast<uint64_t>(wrapTo(t_, static_cast<int64_t>(int_)));
      return;
    }
    if (count_++ == 0)
      float_ = v;
    else if (op_ == weftProd)
      float_ *= v;
    else if (op_ == weftMax)
      float_ = std::max(float_, v);
    else if (op_ == weftMin)
      float_ = std::min(float_, v);
    else
      float_ += v;
  }

  double result() const {
    if (!isInteger(t_)) return op_ == weftAvg ? float_ / n_ : float_;
    int64_t r = wrapTo(t_, static_cast<int64_t>(int_));
    if (op_ == weftAvg) {
      if (t_ == weftUint64)
        r = static_cast<int64_t>(static_cast<uint64_t>(r) / uint64_t(n_));
      else
        r /= n_;
    }
    return static_cast<double>(r);
  }

 private:
  weftDataType_t t_;
  int op_, n_;
  int count_ = 0;
  uint64_t int_ = 0;
  double float_ = 0;
};

// The exact result of reducing element i over all ranks, as the library must produce it.
inline double expectedValue(weftDataType_t t, int op, int nranks, uint64_t i) {
  Accumulator acc(t, op, nranks);
  for (int r = 0; r < nranks; ++r) acc.add(inputValue(t, op, r, nranks, i));
  return acc.result();
}

inline int mantissaBits(weftDataType_t t) {
  switch (t) {
    case weftFloat16: return 10;
    case weftBfloat16: return 7;
    case weftFloat8e4m3: return 3;
    case weftFloat8e5m2: return 2;
    case weftFloat32: return 23;
    default: return 52;
  }
}

inline bool matches(weftDataType_t t, int op, double got, double want) {
  if (op == weftAvg && !isInteger(t))
    return std::fabs(got - want) <= 2 * std::ldexp(std::fabs(want), -mantissaBits(t));
  return got == want;
}

}  // namespace weft::testing
