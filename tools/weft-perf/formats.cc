#include "formats.hpp"

#include <cmath>
#include <cstring>

namespace weft::perf {
namespace {

struct Format {
  int expBits;
  int mantBits;
  bool ieeeSpecials;  // all-ones exponent means inf/NaN; otherwise only all-ones bits are NaN
  bool saturate;      // overflow gives the largest finite value instead of infinity
  uint32_t quietNan;  // without the sign
};

constexpr Format kHalf{5, 10, true, false, 0x7e00};
constexpr Format kBfloat16{8, 7, true, false, 0x7fc0};
constexpr Format kE4m3{4, 3, false, true, 0x7f};
constexpr Format kE5m2{5, 2, true, true, 0x7f};

constexpr int bias(const Format& f) {
  return (1 << (f.expBits - 1)) - 1;
}
constexpr uint32_t signBit(const Format& f) {
  return uint32_t{1} << (f.expBits + f.mantBits);
}
constexpr uint32_t infinityBits(const Format& f) {
  return ((uint32_t{1} << f.expBits) - 1) << f.mantBits;
}
constexpr uint32_t maxFiniteBits(const Format& f) {
  // IEEE: exponent all ones minus one, mantissa all ones. E4M3: exponent all ones, mantissa all
  // ones minus one (S.1111.111 is NaN).
  return f.ieeeSpecials ? infinityBits(f) - 1 : signBit(f) - 2;
}

uint32_t encode(double x, const Format& f) {
  const uint32_t sign = std::signbit(x) ? signBit(f) : 0;
  if (std::isnan(x)) return sign | f.quietNan;
  const double a = std::fabs(x);
  const uint32_t overflow = f.saturate ? maxFiniteBits(f) : infinityBits(f);
  if (std::isinf(a)) return sign | overflow;
  if (a == 0) return sign;
  const int minExp = 1 - bias(f);
  int e = 0;
  (void)std::frexp(a, &e);
  int exp = e - 1;  // a is in [2^exp, 2^(exp+1))
  if (exp > bias(f) + 1) return sign | overflow;
  const bool subnormal = exp < minExp;
  if (subnormal) exp = minExp;  // the quantum stays 2^(minExp - mantBits)
  // Scaled so that one unit is one step of the mantissa; exact (a power-of-two scaling).
  const double q = std::nearbyint(std::ldexp(a, f.mantBits - exp));  // ties to even
  if (q == 0) return sign;
  const uint64_t mantissa = static_cast<uint64_t>(q);
  // Normal: the implicit bit (q >= 2^mantBits) lands in the exponent field as +1, and a
  // mantissa that rounded up to 2^(mantBits+1) carries into the exponent, both as they should.
  // Subnormal: biased exponent 0, and rounding up to 2^mantBits gives the smallest normal.
  const uint64_t biased = subnormal ? 0 : static_cast<uint64_t>(exp + bias(f) - 1);
  const uint64_t bits = (biased << f.mantBits) + mantissa;
  if (bits > maxFiniteBits(f)) return sign | overflow;
  return sign | static_cast<uint32_t>(bits);
}

double decode(uint32_t bits, const Format& f) {
  const bool negative = (bits & signBit(f)) != 0;
  const uint32_t magnitude = bits & (signBit(f) - 1);
  const uint32_t expField = magnitude >> f.mantBits;
  const uint32_t mantissa = magnitude & ((uint32_t{1} << f.mantBits) - 1);
  double v = 0;
  if (f.ieeeSpecials && expField == (uint32_t{1} << f.expBits) - 1) {
    v = mantissa == 0 ? INFINITY : NAN;
  } else if (!f.ieeeSpecials && magnitude == signBit(f) - 1) {
    v = NAN;
  } else if (expField == 0) {
    v = std::ldexp(static_cast<double>(mantissa), 1 - bias(f) - f.mantBits);
  } else {
    v = std::ldexp(static_cast<double>(mantissa | (uint32_t{1} << f.mantBits)),
                   static_cast<int>(expField) - bias(f) - f.mantBits);
  }
  return negative ? -v : v;
}

}  // namespace

uint16_t encodeHalf(double value) {
  return static_cast<uint16_t>(encode(value, kHalf));
}
double decodeHalf(uint16_t bits) {
  return decode(bits, kHalf);
}
uint16_t encodeBfloat16(double value) {
  return static_cast<uint16_t>(encode(value, kBfloat16));
}
double decodeBfloat16(uint16_t bits) {
  return decode(bits, kBfloat16);
}
uint8_t encodeFp8e4m3(double value) {
  return static_cast<uint8_t>(encode(value, kE4m3));
}
double decodeFp8e4m3(uint8_t bits) {
  return decode(bits, kE4m3);
}
uint8_t encodeFp8e5m2(double value) {
  return static_cast<uint8_t>(encode(value, kE5m2));
}
double decodeFp8e5m2(uint8_t bits) {
  return decode(bits, kE5m2);
}

uint64_t encodeFloating(weftDataType_t type, double value) {
  switch (type) {
    case weftFloat16: return encodeHalf(value);
    case weftBfloat16: return encodeBfloat16(value);
    case weftFloat8e4m3: return encodeFp8e4m3(value);
    case weftFloat8e5m2: return encodeFp8e5m2(value);
    case weftFloat32: {
      const float f = static_cast<float>(value);
      uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof bits);
      return bits;
    }
    case weftFloat64: {
      uint64_t bits = 0;
      std::memcpy(&bits, &value, sizeof bits);
      return bits;
    }
    default: return 0;
  }
}

double decodeFloating(weftDataType_t type, uint64_t bits) {
  switch (type) {
    case weftFloat16: return decodeHalf(static_cast<uint16_t>(bits));
    case weftBfloat16: return decodeBfloat16(static_cast<uint16_t>(bits));
    case weftFloat8e4m3: return decodeFp8e4m3(static_cast<uint8_t>(bits));
    case weftFloat8e5m2: return decodeFp8e5m2(static_cast<uint8_t>(bits));
    case weftFloat32: {
      float f = 0;
      const auto b = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b, sizeof f);
      return f;
    }
    case weftFloat64: {
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
    default: return NAN;
  }
}

double unitRoundoff(weftDataType_t type) {
  switch (type) {
    case weftFloat16: return std::ldexp(1.0, -(kHalf.mantBits + 1));
    case weftBfloat16: return std::ldexp(1.0, -(kBfloat16.mantBits + 1));
    case weftFloat8e4m3: return std::ldexp(1.0, -(kE4m3.mantBits + 1));
    case weftFloat8e5m2: return std::ldexp(1.0, -(kE5m2.mantBits + 1));
    case weftFloat32: return std::ldexp(1.0, -24);
    case weftFloat64: return std::ldexp(1.0, -53);
    default: return 0;
  }
}

double smallestSubnormal(weftDataType_t type) {
  const auto of = [](const Format& f) { return std::ldexp(1.0, 1 - bias(f) - f.mantBits); };
  switch (type) {
    case weftFloat16: return of(kHalf);
    case weftBfloat16: return of(kBfloat16);
    case weftFloat8e4m3: return of(kE4m3);
    case weftFloat8e5m2: return of(kE5m2);
    case weftFloat32: return std::ldexp(1.0, -149);
    case weftFloat64: return std::ldexp(1.0, -1074);
    default: return 0;
  }
}

}  // namespace weft::perf
