#include "algorithms/reduce/datatype.hpp"

#include <array>
#include <bit>
#include <cctype>

namespace weft {
namespace {

struct DatatypeInfo {
  const char* name;
  size_t size;
  bool floatingPoint;
};

// Indexed by weftDataType_t.
constexpr std::array<DatatypeInfo, weftNumTypes> kDatatypes = {{
    {"int8", 1, false},
    {"uint8", 1, false},
    {"int32", 4, false},
    {"uint32", 4, false},
    {"int64", 8, false},
    {"uint64", 8, false},
    {"half", 2, true},
    {"float", 4, true},
    {"double", 8, true},
    {"bfloat16", 2, true},
    {"f8e4m3", 1, true},
    {"f8e5m2", 1, true},
}};

struct DatatypeAlias {
  std::string_view name;
  weftDataType_t datatype;
};

// Every spelling parseDatatype accepts besides the canonical names: NCCL's enum names without
// the prefix, the PyTorch/numpy names and the usual abbreviations.
constexpr std::array kAliases = {
    DatatypeAlias{"char", weftInt8},
    DatatypeAlias{"int", weftInt32},
    DatatypeAlias{"float16", weftFloat16},
    DatatypeAlias{"fp16", weftFloat16},
    DatatypeAlias{"f16", weftFloat16},
    DatatypeAlias{"float32", weftFloat32},
    DatatypeAlias{"fp32", weftFloat32},
    DatatypeAlias{"f32", weftFloat32},
    DatatypeAlias{"float64", weftFloat64},
    DatatypeAlias{"fp64", weftFloat64},
    DatatypeAlias{"f64", weftFloat64},
    DatatypeAlias{"bf16", weftBfloat16},
    DatatypeAlias{"fp8e4m3", weftFloat8e4m3},
    DatatypeAlias{"float8e4m3", weftFloat8e4m3},
    DatatypeAlias{"e4m3", weftFloat8e4m3},
    DatatypeAlias{"fp8e5m2", weftFloat8e5m2},
    DatatypeAlias{"float8e5m2", weftFloat8e5m2},
    DatatypeAlias{"e5m2", weftFloat8e5m2},
};

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Rounds the magnitude of a finite, non-NaN float (bits without the sign) to a binary format
// with `kMantBits` stored mantissa bits and exponent bias `kBias`, to nearest even, and returns
// the target's bit pattern without the sign. The result may exceed the largest finite encoding
// (the carry of rounding runs into the exponent field); callers clamp or map it to infinity.
// Magnitudes far above the format's range are reported as `overflow`.
template <int kMantBits, int kBias>
uint32_t roundMagnitude(uint32_t abs, uint32_t overflow) {
  const int exponent = static_cast<int>(abs >> 23) - 127;  // unbiased; -127 for float subnormals
  // Anything at or above 2^(bias+2) overflows every format here, and the shifts below would not
  // fit: answer early.
  if (exponent > kBias + 1) return overflow;
  uint32_t significand = (abs & 0x7fffffu) | (exponent == -127 ? 0u : 0x800000u);
  int shift;  // how far the 24-bit significand moves right to land on the target's last bit
  uint32_t biased;
  if (exponent >= 1 - kBias) {  // normal in the target
    shift = 23 - kMantBits;
    biased = static_cast<uint32_t>(exponent + kBias);
  } else {  // subnormal (or zero) in the target: the unit is 2^(1 - bias - mantBits)
    shift = 23 - kMantBits + (1 - kBias - exponent);
    biased = 0;
  }
  if (shift > 31) return 0;  // below half the smallest subnormal (float subnormals land here)
  uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  // For normals, the implicit bit in `kept` adds one to the exponent field; take it back out.
  uint32_t result = biased == 0 ? kept : ((biased << kMantBits) + kept - (1u << kMantBits));
  if (rest > halfway || (rest == halfway && (kept & 1))) ++result;  // carries are correct
  return result;
}

template <uint8_t kMaxFinite>
uint8_t saturateFp8(uint32_t magnitude) {
  return magnitude > kMaxFinite ? kMaxFinite : static_cast<uint8_t>(magnitude);
}

}  // namespace

bool isValidDatatype(int datatype) noexcept {
  return datatype >= 0 && datatype < weftNumTypes;
}

size_t datatypeSize(weftDataType_t datatype) noexcept {
  return isValidDatatype(datatype) ? kDatatypes[datatype].size : 0;
}

const char* datatypeName(weftDataType_t datatype) noexcept {
  return isValidDatatype(datatype) ? kDatatypes[datatype].name : "invalid";
}

std::optional<weftDataType_t> parseDatatype(std::string_view name) noexcept {
  for (int t = 0; t < weftNumTypes; ++t) {
    if (equalsIgnoringCase(name, kDatatypes[t].name)) return static_cast<weftDataType_t>(t);
  }
  for (const DatatypeAlias& alias : kAliases) {
    if (equalsIgnoringCase(name, alias.name)) return alias.datatype;
  }
  return std::nullopt;
}

bool isFloatingPoint(weftDataType_t datatype) noexcept {
  return isValidDatatype(datatype) && kDatatypes[datatype].floatingPoint;
}

float halfToFloat(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    // Inf, or NaN with its payload (and quiet bit) carried over unchanged.
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal: mantissa * 2^-24, which is a normal float; shift until the leading one becomes
    // the implicit bit.
    int e = 127 - 15 + 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t floatToHalf(float f) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    // NaN: keep the top of the payload and set the quiet bit, as F16C's vcvtps2ph does (the
    // vector kernels must agree with this bit for bit).
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // Finite overflow rounds to infinity (IEEE); infinity stays infinity.
  const uint32_t magnitude = roundMagnitude<10, 15>(abs, 0x7c00u);
  return static_cast<uint16_t>(sign | (magnitude > 0x7c00u ? 0x7c00u : magnitude));
}

float bfloat16ToFloat(uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

uint16_t floatToBfloat16(float f) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN: quiet, sign and payload top
  }
  // bfloat16 has float's exponent range, so adding just under half an ulp (plus one when the
  // kept part is odd) rounds to nearest even everywhere, subnormals and overflow included.
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// OCP FP8 E4M3: S.EEEE.MMM, bias 7, no infinities, S.1111.111 is NaN, largest finite 448.
float fp8e4m3ToFloat(uint8_t v) noexcept {
  const uint32_t sign = static_cast<uint32_t>(v & 0x80u) << 24;
  const uint32_t exponent = (v >> 3) & 0xfu;
  const uint32_t mantissa = v & 0x7u;
  if (exponent == 0xf && mantissa == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);
  if (exponent == 0) {
    // Subnormal: mantissa * 2^-9; exact in float.
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 512.0f);
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 127 - 7) << 23) | (mantissa << 20));
}

// Follows NVIDIA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3): round to nearest even,
// everything beyond the largest finite value (infinity included) saturates to ±448, and NaN
// becomes the canonical 0x7f (sign dropped, as NVIDIA's conversion does).
uint8_t floatToFp8e4m3(float f) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7f;
  return static_cast<uint8_t>(sign | saturateFp8<0x7e>(roundMagnitude<3, 7>(abs, 0x7e)));
}

// OCP FP8 E5M2: S.EEEEE.MM, bias 15, IEEE-like (infinity S.11111.00, NaN S.11111.xx).
float fp8e5m2ToFloat(uint8_t v) noexcept {
  // E5M2 is the top byte of a binary16 with the same meaning.
  return halfToFloat(static_cast<uint16_t>(v << 8));
}

// Follows NVIDIA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2): round to nearest even,
// finite overflow and infinity both saturate to ±57344 (so an infinite input of a reduction comes
// out as ±57344, as on the GPU), and NaN becomes the canonical 0x7f (sign dropped).
uint8_t floatToFp8e5m2(float f) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7f;
  return static_cast<uint8_t>(sign | saturateFp8<0x7b>(roundMagnitude<2, 15>(abs, 0x7b)));
}

}  // namespace weft
