#include "algorithms/reduce/datatype.hpp"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace weft;

namespace {

// A binary floating-point format described by its field widths, decoded here from first
// principles (ldexp on the fields) so that no expectation comes from the code under test.
struct Format {
  const char* name;
  int expBits;
  int mantBits;
  int bias;
  bool ieeeSpecials;  // all-ones exponent is inf/NaN (IEEE); otherwise only S.1111.111 is NaN
  double maxFinite;
  bool overflowToInf;  // else saturates to ±maxFinite (fp8, __NV_SATFINITE)
  float (*toFloat)(uint16_t);
  uint16_t (*fromFloat)(float);
};

const Format kHalf{"half",
                   5,
                   10,
                   15,
                   true,
                   65504.0,
                   true,
                   [](uint16_t v) { return halfToFloat(v); },
                   [](float f) { return floatToHalf(f); }};
const Format kBfloat16{"bfloat16",
                       8,
                       7,
                       127,
                       true,
                       std::ldexp(255.0 / 128.0, 127),
                       true,
                       [](uint16_t v) { return bfloat16ToFloat(v); },
                       [](float f) { return floatToBfloat16(f); }};
const Format kE4m3{"f8e4m3",
                   4,
                   3,
                   7,
                   false,
                   448.0,
                   false,
                   [](uint16_t v) { return fp8e4m3ToFloat(static_cast<uint8_t>(v)); },
                   [](float f) { return static_cast<uint16_t>(floatToFp8e4m3(f)); }};
const Format kE5m2{"f8e5m2",
                   5,
                   2,
                   15,
                   true,
                   57344.0,
                   false,
                   [](uint16_t v) { return fp8e5m2ToFloat(static_cast<uint8_t>(v)); },
                   [](float f) { return static_cast<uint16_t>(floatToFp8e5m2(f)); }};

int totalBits(const Format& f) {
  return 1 + f.expBits + f.mantBits;
}
uint32_t signBit(const Format& f) {
  return 1u << (totalBits(f) - 1);
}

bool refIsNan(const Format& f, uint32_t code) {
  const uint32_t e = (code >> f.mantBits) & ((1u << f.expBits) - 1);
  const uint32_t m = code & ((1u << f.mantBits) - 1);
  const uint32_t eMax = (1u << f.expBits) - 1;
  const uint32_t mMax = (1u << f.mantBits) - 1;
  return f.ieeeSpecials ? (e == eMax && m != 0) : (e == eMax && m == mMax);
}

// The value of a code; NaN codes give NaN.
double refDecode(const Format& f, uint32_t code) {
  if (refIsNan(f, code)) return std::numeric_limits<double>::quiet_NaN();
  const bool negative = (code & signBit(f)) != 0;
  const int e = static_cast<int>((code >> f.mantBits) & ((1u << f.expBits) - 1));
  const int m = static_cast<int>(code & ((1u << f.mantBits) - 1));
  double v;
  if (f.ieeeSpecials && e == (1 << f.expBits) - 1) {
    v = std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    v = std::ldexp(m, 1 - f.bias - f.mantBits);
  } else {
    v = std::ldexp(m + (1 << f.mantBits), e - f.bias - f.mantBits);
  }
  return negative ? -v : v;
}

float floatOf(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// Checks every code of a format against the first-principles decoding and that converting back
// gives the code again (NaN: some NaN; the exact NaN is checked per format).
void checkEveryCode(const Format& f, const std::function<uint32_t(uint32_t)>& nanRoundTrip,
                    const std::function<uint32_t(uint32_t)>& infRoundTrip) {
  int failures = 0;
  for (uint32_t code = 0; code < (1u << totalBits(f)) && failures < 10; ++code) {
    const float value = f.toFloat(static_cast<uint16_t>(code));
    const double expected = refDecode(f, code);
    const auto back = f.fromFloat(value);
    bool ok;
    uint32_t expectedBack = code;
    if (std::isnan(expected)) {
      expectedBack = nanRoundTrip(code);
      ok = std::isnan(value) && back == expectedBack;
    } else {
      if (std::isinf(expected)) expectedBack = infRoundTrip(code);
      ok = static_cast<double>(value) == expected &&
           std::signbit(value) == std::signbit(expected) && back == expectedBack;
    }
    if (!ok) {
      ++failures;
      FAIL_CHECK(f.name << " code 0x" << std::hex << code << ": decoded " << value << " (expected "
                        << expected << "), back to 0x" << back << " (expected 0x" << expectedBack
                        << ")");
    }
  }
  CHECK(failures == 0);
}

uint32_t identity(uint32_t code) {
  return code;
}

}  // namespace

TEST_CASE("every datatype has its nccl-tests name, its size, and parses back from that name") {
  struct Row {
    weftDataType_t type;
    const char* name;
    size_t size;
    bool floating;
  };
  const Row rows[] = {
      {weftInt8, "int8", 1, false},        {weftUint8, "uint8", 1, false},
      {weftInt32, "int32", 4, false},      {weftUint32, "uint32", 4, false},
      {weftInt64, "int64", 8, false},      {weftUint64, "uint64", 8, false},
      {weftFloat16, "half", 2, true},      {weftFloat32, "float", 4, true},
      {weftFloat64, "double", 8, true},    {weftBfloat16, "bfloat16", 2, true},
      {weftFloat8e4m3, "f8e4m3", 1, true}, {weftFloat8e5m2, "f8e5m2", 1, true},
  };
  STATIC_REQUIRE(sizeof(rows) / sizeof(rows[0]) == weftNumTypes);
  for (const Row& row : rows) {
    INFO(row.name);
    CHECK(isValidDatatype(row.type));
    CHECK(datatypeSize(row.type) == row.size);
    CHECK(std::string(datatypeName(row.type)) == row.name);
    CHECK(isFloatingPoint(row.type) == row.floating);
    CHECK(parseDatatype(row.name) == row.type);
  }
}

TEST_CASE("parseDatatype accepts the usual aliases in any letter case") {
  CHECK(parseDatatype("char") == weftInt8);
  CHECK(parseDatatype("int") == weftInt32);
  CHECK(parseDatatype("float16") == weftFloat16);
  CHECK(parseDatatype("fp16") == weftFloat16);
  CHECK(parseDatatype("float32") == weftFloat32);
  CHECK(parseDatatype("fp32") == weftFloat32);
  CHECK(parseDatatype("float64") == weftFloat64);
  CHECK(parseDatatype("bf16") == weftBfloat16);
  CHECK(parseDatatype("fp8e4m3") == weftFloat8e4m3);
  CHECK(parseDatatype("e5m2") == weftFloat8e5m2);
  CHECK(parseDatatype("BFloat16") == weftBfloat16);
  CHECK(parseDatatype("HALF") == weftFloat16);
}

TEST_CASE("parseDatatype rejects unknown names, prefixes and the empty string") {
  CHECK_FALSE(parseDatatype("").has_value());
  CHECK_FALSE(parseDatatype("int16").has_value());
  CHECK_FALSE(parseDatatype("floa").has_value());
  CHECK_FALSE(parseDatatype("float ").has_value());
  CHECK_FALSE(parseDatatype("all").has_value());
}

TEST_CASE("datatype values -1 and 12 are invalid: size 0, a placeholder name, not floating") {
  for (int value : {-1, 12}) {
    INFO(value);
    const auto type = static_cast<weftDataType_t>(value);
    CHECK_FALSE(isValidDatatype(value));
    CHECK(datatypeSize(type) == 0);
    REQUIRE(datatypeName(type) != nullptr);
    CHECK(std::string(datatypeName(type)) == "invalid");
    CHECK_FALSE(isFloatingPoint(type));
  }
}

TEST_CASE("all 2^16 half patterns decode exactly and round-trip, NaN comes back quiet") {
  // NaN: payload kept, quiet bit (0x0200) set.
  checkEveryCode(
      kHalf, [](uint32_t code) { return code | 0x0200u; }, identity);
}

TEST_CASE("all 2^16 bfloat16 patterns decode exactly and round-trip, NaN comes back quiet") {
  checkEveryCode(
      kBfloat16, [](uint32_t code) { return code | 0x0040u; }, identity);
}

TEST_CASE("all 256 fp8 e4m3 patterns decode exactly and round-trip, NaN comes back as 0x7f") {
  checkEveryCode(
      kE4m3, [](uint32_t) { return 0x7fu; }, identity);
  CHECK(fp8e4m3ToFloat(0x7e) == 448.0f);
  CHECK(fp8e4m3ToFloat(0x08) == std::ldexp(1.0f, -6));
  CHECK(fp8e4m3ToFloat(0x01) == std::ldexp(1.0f, -9));
  CHECK(std::isnan(fp8e4m3ToFloat(0xff)));
  CHECK(fp8e4m3ToFloat(0x78) == 256.0f);  // S.1111.000 is a number in E4M3, not infinity
}

TEST_CASE("all 256 fp8 e5m2 patterns decode exactly, infinities come back as ±57344") {
  // __NV_SATFINITE maps infinity to the largest finite value.
  checkEveryCode(
      kE5m2, [](uint32_t) { return 0x7fu; }, [](uint32_t code) { return (code & 0x80u) | 0x7bu; });
  CHECK(fp8e5m2ToFloat(0x7b) == 57344.0f);
  CHECK(std::isinf(fp8e5m2ToFloat(0x7c)));
  CHECK(fp8e5m2ToFloat(0x01) == std::ldexp(1.0f, -16));
}

TEST_CASE("float to half rounds to nearest even at hand-picked boundaries") {
  const float ulp = std::ldexp(1.0f, -10);  // of half at 1.0
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(65504.0f) == 0x7bff);
  // Ties go to the even mantissa.
  CHECK(floatToHalf(1.0f + ulp / 2) == 0x3c00);
  CHECK(floatToHalf(1.0f + 3 * ulp / 2) == 0x3c02);
  // Just off a tie goes to the nearer value.
  CHECK(floatToHalf(std::nextafter(1.0f + ulp / 2, 2.0f)) == 0x3c01);
  CHECK(floatToHalf(std::nextafter(1.0f + 3 * ulp / 2, 0.0f)) == 0x3c01);
  // Overflow: 65520 is the tie between 65504 and 2^16, which is even and infinite.
  CHECK(floatToHalf(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(floatToHalf(65520.0f) == 0x7c00);
  CHECK(floatToHalf(-65520.0f) == 0xfc00);
  CHECK(floatToHalf(1e6f) == 0x7c00);
  CHECK(floatToHalf(std::numeric_limits<float>::max()) == 0x7c00);
  CHECK(floatToHalf(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(floatToHalf(-std::numeric_limits<float>::infinity()) == 0xfc00);
  // Subnormals: the smallest is 2^-24; half of it ties to zero, 3/2 of it ties to 2.
  CHECK(floatToHalf(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(floatToHalf(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(floatToHalf(std::ldexp(3.0f, -25)) == 0x0002);
  CHECK(floatToHalf(-std::ldexp(1.0f, -24)) == 0x8001);
  CHECK(floatToHalf(std::ldexp(1.0f, -14)) == 0x0400);
  CHECK(floatToHalf(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -24)) == 0x03ff);
  CHECK(floatToHalf(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)) == 0x0400);  // tie, carries
  CHECK(floatToHalf(1e-40f) == 0x0000);                                         // float subnormal
  CHECK(floatToHalf(-1e-40f) == 0x8000);
  // Signed zero.
  CHECK(floatToHalf(0.0f) == 0x0000);
  CHECK(floatToHalf(-0.0f) == 0x8000);
  // NaN: quiet, sign and the top payload bits kept.
  CHECK(floatToHalf(floatOf(0x7fc00000u)) == 0x7e00);
  CHECK(floatToHalf(floatOf(0xffc00001u)) == 0xfe00);
  CHECK(floatToHalf(floatOf(0x7f800001u)) == 0x7e00);
  CHECK(floatToHalf(floatOf(0x7fa00000u)) == 0x7f00);
}

TEST_CASE("float to bfloat16 rounds to nearest even and keeps NaN a quiet NaN") {
  const float ulp = std::ldexp(1.0f, -7);
  CHECK(floatToBfloat16(1.0f) == 0x3f80);
  CHECK(floatToBfloat16(1.0f + ulp / 2) == 0x3f80);
  CHECK(floatToBfloat16(1.0f + 3 * ulp / 2) == 0x3f82);
  CHECK(floatToBfloat16(std::nextafter(1.0f + ulp / 2, 2.0f)) == 0x3f81);
  CHECK(floatToBfloat16(std::nextafter(1.0f + 3 * ulp / 2, 0.0f)) == 0x3f81);
  // 0x7f7f8000 is the tie between the largest finite bfloat16 (odd) and infinity (even).
  CHECK(floatToBfloat16(floatOf(0x7f7f7fffu)) == 0x7f7f);
  CHECK(floatToBfloat16(floatOf(0x7f7f8000u)) == 0x7f80);
  CHECK(floatToBfloat16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(floatToBfloat16(-std::numeric_limits<float>::infinity()) == 0xff80);
  // Subnormals: 0x8000 below the smallest is a tie to zero; 0x18000 a tie up to 2.
  CHECK(floatToBfloat16(floatOf(0x00008000u)) == 0x0000);
  CHECK(floatToBfloat16(floatOf(0x00008001u)) == 0x0001);
  CHECK(floatToBfloat16(floatOf(0x00018000u)) == 0x0002);
  CHECK(floatToBfloat16(floatOf(0x80010000u)) == 0x8001);
  CHECK(floatToBfloat16(-0.0f) == 0x8000);
  CHECK(floatToBfloat16(floatOf(0x7f800001u)) == 0x7fc0);
  CHECK(floatToBfloat16(floatOf(0xff810000u)) == 0xffc1);
}

TEST_CASE("float to fp8 e4m3 rounds to nearest even and saturates to ±448") {
  CHECK(floatToFp8e4m3(1.0f) == 0x38);
  CHECK(floatToFp8e4m3(1.0625f) == 0x38);  // tie between 1 and 1.125
  CHECK(floatToFp8e4m3(1.1875f) == 0x3a);  // tie between 1.125 and 1.25
  CHECK(floatToFp8e4m3(std::nextafter(1.0625f, 2.0f)) == 0x39);
  CHECK(floatToFp8e4m3(240.0f) == 0x77);
  CHECK(floatToFp8e4m3(256.0f) == 0x78);
  CHECK(floatToFp8e4m3(448.0f) == 0x7e);
  CHECK(floatToFp8e4m3(449.0f) == 0x7e);
  CHECK(floatToFp8e4m3(464.0f) == 0x7e);
  CHECK(floatToFp8e4m3(1e9f) == 0x7e);
  CHECK(floatToFp8e4m3(-1e9f) == 0xfe);
  CHECK(floatToFp8e4m3(std::numeric_limits<float>::infinity()) == 0x7e);
  CHECK(floatToFp8e4m3(-std::numeric_limits<float>::infinity()) == 0xfe);
  CHECK(floatToFp8e4m3(std::numeric_limits<float>::quiet_NaN()) == 0x7f);
  CHECK(floatToFp8e4m3(-std::numeric_limits<float>::quiet_NaN()) == 0x7f);
  // Subnormals: units of 2^-9.
  CHECK(floatToFp8e4m3(std::ldexp(1.0f, -9)) == 0x01);
  CHECK(floatToFp8e4m3(std::ldexp(1.0f, -10)) == 0x00);
  CHECK(floatToFp8e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(floatToFp8e4m3(std::ldexp(3.0f, -10)) == 0x02);
  CHECK(floatToFp8e4m3(std::ldexp(7.0f, -9)) == 0x07);
  CHECK(floatToFp8e4m3(std::ldexp(15.0f, -10)) == 0x08);  // tie, carries into the exponent
  CHECK(floatToFp8e4m3(std::ldexp(1.0f, -6)) == 0x08);
  CHECK(floatToFp8e4m3(-std::ldexp(1.0f, -9)) == 0x81);
  CHECK(floatToFp8e4m3(1e-30f) == 0x00);
  CHECK(floatToFp8e4m3(-0.0f) == 0x80);
}

TEST_CASE("float to fp8 e5m2 rounds to nearest even and saturates to ±57344, infinity too") {
  CHECK(floatToFp8e5m2(1.0f) == 0x3c);
  CHECK(floatToFp8e5m2(1.125f) == 0x3c);  // tie between 1 and 1.25
  CHECK(floatToFp8e5m2(1.375f) == 0x3e);  // tie between 1.25 and 1.5
  CHECK(floatToFp8e5m2(std::nextafter(1.125f, 2.0f)) == 0x3d);
  CHECK(floatToFp8e5m2(57344.0f) == 0x7b);
  CHECK(floatToFp8e5m2(61440.0f) == 0x7b);
  CHECK(floatToFp8e5m2(1e6f) == 0x7b);
  CHECK(floatToFp8e5m2(std::numeric_limits<float>::infinity()) == 0x7b);
  CHECK(floatToFp8e5m2(-std::numeric_limits<float>::infinity()) == 0xfb);
  CHECK(floatToFp8e5m2(std::numeric_limits<float>::quiet_NaN()) == 0x7f);
  CHECK(floatToFp8e5m2(std::ldexp(1.0f, -16)) == 0x01);
  CHECK(floatToFp8e5m2(std::ldexp(1.0f, -17)) == 0x00);
  CHECK(floatToFp8e5m2(std::ldexp(3.0f, -17)) == 0x02);
  CHECK(floatToFp8e5m2(std::ldexp(1.0f, -14)) == 0x04);
  CHECK(floatToFp8e5m2(-0.0f) == 0x80);
}

TEST_CASE(
    "every midpoint between neighbouring codes rounds to the even one, and its neighbours "
    "to the nearer one") {
  for (const Format* f : {&kHalf, &kBfloat16, &kE4m3, &kE5m2}) {
    INFO(f->name);
    int failures = 0;
    const uint32_t sign = signBit(*f);
    for (uint32_t code = 0; code + 1 < sign && failures < 10; ++code) {
      const double lo = refDecode(*f, code);
      const double hi = refDecode(*f, code + 1);
      if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
      // Neighbouring codes differ in at most the format's precision plus one bit: exact in float.
      const auto mid = static_cast<float>((lo + hi) / 2);
      REQUIRE(static_cast<double>(mid) == (lo + hi) / 2);
      const uint32_t even = (code & 1) == 0 ? code : code + 1;
      for (uint32_t s : {0u, sign}) {
        const float m = s != 0 ? -mid : mid;
        const float away = std::nextafter(m, s != 0 ? -INFINITY : INFINITY);
        const float toward = std::nextafter(m, 0.0f);
        const uint32_t gotTie = f->fromFloat(m);
        const uint32_t gotAway = f->fromFloat(away);
        const uint32_t gotToward = f->fromFloat(toward);
        if (gotTie != (even | s) || gotAway != ((code + 1) | s) || gotToward != (code | s)) {
          ++failures;
          FAIL_CHECK("between 0x" << std::hex << (code | s) << " and 0x" << ((code + 1) | s)
                                  << ": tie gave 0x" << gotTie << ", above gave 0x" << gotAway
                                  << ", below gave 0x" << gotToward);
        }
      }
    }
    CHECK(failures == 0);
  }
}

TEST_CASE("a sweep over the float bit patterns converts each to the nearest code") {
  // Sampled with a stride that visits every exponent and many mantissas; each result is checked
  // against its neighbours' decoded values (first principles), not against another conversion.
  for (const Format* f : {&kHalf, &kBfloat16, &kE4m3, &kE5m2}) {
    INFO(f->name);
    int failures = 0;
    const uint32_t sign = signBit(*f);
    for (uint64_t bits = 0; bits <= 0xffffffffu && failures < 10; bits += 0x1003) {
      const float x = floatOf(static_cast<uint32_t>(bits));
      const uint32_t got = f->fromFloat(x);
      if (std::isnan(x)) {
        if (!refIsNan(*f, got)) {
          ++failures;
          FAIL_CHECK("NaN 0x" << std::hex << bits << " gave non-NaN 0x" << got);
        }
        continue;
      }
      const double v = x;
      const double maxFinite = f->maxFinite;
      double expected;
      if (std::fabs(v) > maxFinite && !f->overflowToInf) {
        expected = std::copysign(maxFinite, v);
      } else {
        // Nearest even by rescaling to the quantum of x's binade, in double (exact).
        int e;
        std::frexp(v, &e);
        const int minExp = 1 - f->bias;
        const int quantum = std::max(e - 1, minExp) - f->mantBits;
        expected = std::ldexp(std::nearbyint(std::ldexp(v, -quantum)), quantum);
        if (std::fabs(expected) > maxFinite) expected = std::copysign(INFINITY, v);
        if (std::isinf(v)) expected = v;
      }
      const double gotValue = refDecode(*f, got);
      const bool gotNegative = (got & sign) != 0;
      if (gotValue != expected || gotNegative != std::signbit(v)) {
        ++failures;
        FAIL_CHECK(x << " (0x" << std::hex << bits << ") gave 0x" << got << " = " << gotValue
                     << ", expected " << expected);
      }
    }
    CHECK(failures == 0);
  }
}
