#include "tools/weft-perf/formats.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>

using namespace weft::perf;

namespace {

struct Case {
  double value;
  uint32_t bits;
};

}  // namespace

// Bit patterns derived by hand from the field layouts: sign | exponent + bias | mantissa.
// half: 1+5+10, bias 15. bfloat16: 1+8+7, bias 127. e4m3: 1+4+3, bias 7, no infinity,
// S.1111.111 is NaN, largest 448. e5m2: 1+5+2, bias 15, IEEE specials, largest 57344.

TEST_CASE("half encodes the values weft-perf uses to hand-derived bits, and back") {
  const Case cases[] = {{0.0, 0x0000},     {1.0, 0x3c00},     {-1.0, 0xbc00},   {2.0, 0x4000},
                        {-2.0, 0xc000},    {3.0, 0x4200},     {8.0, 0x4800},    {-8.0, 0xc800},
                        {0.5, 0x3800},     {16.0, 0x4c00},    {1000.0, 0x63d0}, {2048.0, 0x6800},
                        {65504.0, 0x7bff}, {0x1p-14, 0x0400}, {0x1p-24, 0x0001}};
  for (const Case& c : cases) {
    INFO(c.value);
    CHECK(encodeHalf(c.value) == c.bits);
    CHECK(decodeHalf(static_cast<uint16_t>(c.bits)) == c.value);
  }
  CHECK(encodeHalf(-0.0) == 0x8000);
  CHECK(encodeHalf(1.0 / 3) == 0x3555);          // 1.0101010101|01.. rounds down
  CHECK(encodeHalf(1 + 0x1p-11) == 0x3c00);      // tie: to even (mantissa 0)
  CHECK(encodeHalf(1 + 3 * 0x1p-11) == 0x3c02);  // tie between 1 and 2: to 2
  CHECK(encodeHalf(2049.0) == 0x6800);           // tie: 2048 (even)
  CHECK(encodeHalf(2051.0) == 0x6802);           // tie: 2052 (even)
  CHECK(encodeHalf(65519.0) == 0x7bff);          // below the halfway point to 2^16
  CHECK(encodeHalf(65520.0) == 0x7c00);          // overflows to infinity
  CHECK(encodeHalf(INFINITY) == 0x7c00);
  CHECK(encodeHalf(-INFINITY) == 0xfc00);
  CHECK(encodeHalf(0x1p-25) == 0x0000);  // tie between 0 and the smallest subnormal: 0
  CHECK(encodeHalf(0x1.8p-25) == 0x0001);
  CHECK(encodeHalf(NAN) == 0x7e00);
  CHECK(std::isnan(decodeHalf(0x7e00)));
  CHECK(std::isnan(decodeHalf(0x7c01)));
  CHECK(decodeHalf(0x7c00) == INFINITY);
}

TEST_CASE("bfloat16 encodes to hand-derived bits, and back") {
  const Case cases[] = {{0.0, 0x0000},   {1.0, 0x3f80},   {-1.0, 0xbf80},     {2.0, 0x4000},
                        {3.0, 0x4040},   {-8.0, 0xc100},  {0.5, 0x3f00},      {16.0, 0x4180},
                        {255.0, 0x437f}, {256.0, 0x4380}, {0x1p-126, 0x0080}, {0x1p-133, 0x0001}};
  for (const Case& c : cases) {
    INFO(c.value);
    CHECK(encodeBfloat16(c.value) == c.bits);
    CHECK(decodeBfloat16(static_cast<uint16_t>(c.bits)) == c.value);
  }
  CHECK(encodeBfloat16(1.0 / 3) == 0x3eab);      // 1.0101010|1010.. rounds up
  CHECK(encodeBfloat16(257.0) == 0x4380);        // tie: 256 (even)
  CHECK(encodeBfloat16(259.0) == 0x4382);        // tie: 260 (even)
  CHECK(encodeBfloat16(0x1.fffp127) == 0x7f80);  // rounds past the largest finite: infinity
  CHECK(encodeBfloat16(0x1.fep127) == 0x7f7f);
  CHECK(encodeBfloat16(-INFINITY) == 0xff80);
  CHECK(encodeBfloat16(NAN) == 0x7fc0);
}

TEST_CASE("fp8 e4m3 encodes to hand-derived bits, and back") {
  const Case cases[] = {
      {0.0, 0x00},  {1.0, 0x38},   {-1.0, 0xb8},   {2.0, 0x40},    {-2.0, 0xc0},    {3.0, 0x44},
      {4.0, 0x48},  {5.0, 0x4a},   {7.0, 0x4e},    {-8.0, 0xd0},   {0.5, 0x30},     {16.0, 0x58},
      {15.0, 0x57}, {448.0, 0x7e}, {0x1p-6, 0x08}, {0x1p-9, 0x01}, {0x1.cp-7, 0x07}};
  for (const Case& c : cases) {
    INFO(c.value);
    CHECK(encodeFp8e4m3(c.value) == c.bits);
    CHECK(decodeFp8e4m3(static_cast<uint8_t>(c.bits)) == c.value);
  }
  CHECK(encodeFp8e4m3(17.0) == 0x58);   // tie between 16 and 18: 16 (even)
  CHECK(encodeFp8e4m3(19.0) == 0x5a);   // tie between 18 and 20: 20
  CHECK(encodeFp8e4m3(464.0) == 0x7e);  // tie between 448 and 480: 448 (even)
  CHECK(encodeFp8e4m3(470.0) == 0x7e);  // nearer 480, the NaN pattern: saturates to 448
  CHECK(encodeFp8e4m3(1e6) == 0x7e);
  CHECK(encodeFp8e4m3(-INFINITY) == 0xfe);
  CHECK(encodeFp8e4m3(NAN) == 0x7f);
  CHECK(std::isnan(decodeFp8e4m3(0x7f)));
  CHECK(std::isnan(decodeFp8e4m3(0xff)));
  CHECK(decodeFp8e4m3(0x78) == 256.0);  // exponent all ones is an ordinary binade in E4M3
}

TEST_CASE("fp8 e5m2 encodes to hand-derived bits, and back") {
  const Case cases[] = {{0.0, 0x00},     {1.0, 0x3c},     {-1.0, 0xbc},   {2.0, 0x40},
                        {3.0, 0x42},     {5.0, 0x45},     {6.0, 0x46},    {7.0, 0x47},
                        {8.0, 0x48},     {-8.0, 0xc8},    {0.5, 0x38},    {16.0, 0x4c},
                        {57344.0, 0x7b}, {0x1p-14, 0x04}, {0x1p-16, 0x01}};
  for (const Case& c : cases) {
    INFO(c.value);
    CHECK(encodeFp8e5m2(c.value) == c.bits);
    CHECK(decodeFp8e5m2(static_cast<uint8_t>(c.bits)) == c.value);
  }
  CHECK(encodeFp8e5m2(9.0) == 0x48);   // tie between 8 and 10: 8
  CHECK(encodeFp8e5m2(11.0) == 0x4a);  // tie between 10 and 12: 12
  CHECK(encodeFp8e5m2(1e6) == 0x7b);   // saturates
  CHECK(encodeFp8e5m2(INFINITY) == 0x7b);
  CHECK(encodeFp8e5m2(NAN) == 0x7f);
  CHECK(decodeFp8e5m2(0x7c) == INFINITY);
  CHECK(std::isnan(decodeFp8e5m2(0x7d)));
}

TEST_CASE("every non-NaN pattern decodes and encodes back to itself, in increasing order") {
  const auto roundTrip = [](int bits, auto encode, auto decode, uint32_t signBit) {
    double previous = -INFINITY;
    for (uint32_t b = 0; b < (1u << bits); ++b) {
      const double v = decode(b);
      if (std::isnan(v)) continue;
      INFO(b);
      CHECK(encode(v) == b);
      // Positive patterns increase with their value.
      if (b < signBit) {
        CHECK(v > previous);
        previous = v;
      }
    }
  };
  roundTrip(
      16, encodeHalf, [](uint32_t b) { return decodeHalf(uint16_t(b)); }, 0x8000);
  roundTrip(
      16, encodeBfloat16, [](uint32_t b) { return decodeBfloat16(uint16_t(b)); }, 0x8000);
  // e4m3 and e5m2 saturate infinities, so their infinity pattern (e5m2) is skipped.
  roundTrip(
      8, encodeFp8e4m3, [](uint32_t b) { return decodeFp8e4m3(uint8_t(b)); }, 0x80);
  roundTrip(
      8, encodeFp8e5m2,
      [](uint32_t b) {
        const double v = decodeFp8e5m2(uint8_t(b));
        return std::isinf(v) ? NAN : v;
      },
      0x80);
}

TEST_CASE("the datatype-generic forms and the rounding constants") {
  CHECK(encodeFloating(weftFloat32, 1.0) == 0x3f800000);
  CHECK(encodeFloating(weftFloat32, 1.0 / 3) == 0x3eaaaaab);
  CHECK(encodeFloating(weftFloat64, -2.0) == 0xc000000000000000ull);
  CHECK(encodeFloating(weftFloat16, 2.0) == 0x4000);
  CHECK(encodeFloating(weftBfloat16, 2.0) == 0x4000);
  CHECK(encodeFloating(weftFloat8e4m3, 2.0) == 0x40);
  CHECK(encodeFloating(weftFloat8e5m2, 2.0) == 0x40);
  CHECK(decodeFloating(weftFloat32, 0xc0400000) == -3.0);
  CHECK(decodeFloating(weftFloat64, 0x3ff8000000000000ull) == 1.5);
  CHECK(decodeFloating(weftFloat8e4m3, 0x44) == 3.0);
  CHECK(unitRoundoff(weftFloat16) == 0x1p-11);
  CHECK(unitRoundoff(weftBfloat16) == 0x1p-8);
  CHECK(unitRoundoff(weftFloat8e4m3) == 0x1p-4);
  CHECK(unitRoundoff(weftFloat8e5m2) == 0x1p-3);
  CHECK(unitRoundoff(weftFloat32) == 0x1p-24);
  CHECK(unitRoundoff(weftFloat64) == 0x1p-53);
  CHECK(smallestSubnormal(weftFloat16) == 0x1p-24);
  CHECK(smallestSubnormal(weftBfloat16) == 0x1p-133);
  CHECK(smallestSubnormal(weftFloat8e4m3) == 0x1p-9);
  CHECK(smallestSubnormal(weftFloat8e5m2) == 0x1p-16);
}
