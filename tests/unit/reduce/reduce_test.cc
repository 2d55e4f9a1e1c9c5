#include "algorithms/reduce/reduce.hpp"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/reduce/datatype.hpp"

using namespace weft;

namespace {

constexpr ReduceKind kKinds[] = {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max,
                                 ReduceKind::Min};
constexpr size_t kLengths[] = {0, 1, 7, 64, 1000, 4099};
constexpr size_t kGuard = 9;  // elements after the range that must stay untouched

const char* kindName(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Prod: return "prod";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
  }
  return "?";
}

using Rng = std::mt19937_64;

// --- reference arithmetic, written plainly ------------------------------------------------------

// Max/Min as NCCL's fmaxf/fminf: a NaN operand loses to a number; two NaNs give NaN; of equal
// operands (+0 and -0 included) the first is returned.
template <class F>
F refCombine(ReduceKind k, F a, F b) {
  switch (k) {
    case ReduceKind::Sum: return a + b;
    case ReduceKind::Prod: return a * b;
    case ReduceKind::Max:
      if (std::isnan(a)) return b;
      if (std::isnan(b)) return a;
      return b > a ? b : a;
    case ReduceKind::Min:
      if (std::isnan(a)) return b;
      if (std::isnan(b)) return a;
      return b < a ? b : a;
  }
  return a;
}

// Integers: exact arithmetic in 128 bits, then the modular conversion C++20 defines.
template <class T>
T refIntCombine(ReduceKind k, T a, T b) {
  using Wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
  switch (k) {
    case ReduceKind::Sum: return static_cast<T>(static_cast<Wide>(a) + static_cast<Wide>(b));
    case ReduceKind::Prod: return static_cast<T>(static_cast<Wide>(a) * static_cast<Wide>(b));
    case ReduceKind::Max: return std::max(a, b);
    case ReduceKind::Min: return std::min(a, b);
  }
  return a;
}

// A narrow binary format, decoded and encoded from its field widths with ldexp/frexp.
struct Narrow {
  int expBits;
  int mantBits;
  int bias;
  bool ieeeSpecials;  // all-ones exponent is inf/NaN; otherwise only S.1111.111 is NaN
  double maxFinite;
  bool overflowToInf;  // else saturates to ±maxFinite
};

constexpr Narrow kHalfFormat{5, 10, 15, true, 65504.0, true};
constexpr Narrow kBfloat16Format{8, 7, 127, true, 3.3895313892515355e38, true};  // 0x7f7f
constexpr Narrow kE4m3Format{4, 3, 7, false, 448.0, false};
constexpr Narrow kE5m2Format{5, 2, 15, true, 57344.0, false};

uint32_t signBit(const Narrow& f) {
  return 1u << (f.expBits + f.mantBits);
}

bool isNanCode(const Narrow& f, uint32_t code) {
  const uint32_t e = (code >> f.mantBits) & ((1u << f.expBits) - 1);
  const uint32_t m = code & ((1u << f.mantBits) - 1);
  const bool eMax = e == (1u << f.expBits) - 1;
  return f.ieeeSpecials ? (eMax && m != 0) : (eMax && m == (1u << f.mantBits) - 1);
}

double decode(const Narrow& f, uint32_t code) {
  if (isNanCode(f, code)) return std::numeric_limits<double>::quiet_NaN();
  const int e = static_cast<int>((code >> f.mantBits) & ((1u << f.expBits) - 1));
  const int m = static_cast<int>(code & ((1u << f.mantBits) - 1));
  double v;
  if (f.ieeeSpecials && e == (1 << f.expBits) - 1) {
    v = INFINITY;
  } else if (e == 0) {
    v = std::ldexp(m, 1 - f.bias - f.mantBits);
  } else {
    v = std::ldexp(m + (1 << f.mantBits), e - f.bias - f.mantBits);
  }
  return (code & signBit(f)) != 0 ? -v : v;
}

// Nearest representable value, ties to even, overflow per the format. NaN passes through.
double roundTo(const Narrow& f, double v) {
  if (std::isnan(v)) return v;
  if (std::fabs(v) > f.maxFinite && !f.overflowToInf) return std::copysign(f.maxFinite, v);
  if (std::isinf(v)) return v;
  int e;
  std::frexp(v, &e);
  const int quantum = std::max(e - 1, 1 - f.bias) - f.mantBits;
  const double r = std::ldexp(std::nearbyint(std::ldexp(v, -quantum)), quantum);
  if (std::fabs(r) > f.maxFinite) {
    return f.overflowToInf ? std::copysign(INFINITY, v) : std::copysign(f.maxFinite, v);
  }
  return r;
}

// The code of a representable, non-NaN value.
uint32_t encode(const Narrow& f, double v) {
  const uint32_t sign = std::signbit(v) ? signBit(f) : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  if (std::isinf(a)) return sign | (((1u << f.expBits) - 1) << f.mantBits);
  int e;
  std::frexp(a, &e);
  const int exponent = e - 1;
  if (exponent < 1 - f.bias) {
    return sign | static_cast<uint32_t>(std::ldexp(a, f.bias - 1 + f.mantBits));
  }
  const auto mant =
      static_cast<uint32_t>(std::ldexp(a, f.mantBits - exponent)) - (1u << f.mantBits);
  return sign | (static_cast<uint32_t>(exponent + f.bias) << f.mantBits) | mant;
}

// --- the datatypes under test -------------------------------------------------------------------

template <class T, weftDataType_t kT>
struct IntType {
  using Storage = T;
  static constexpr weftDataType_t kType = kT;
  static T random(Rng& rng) { return static_cast<T>(rng()); }
  static T reference(ReduceKind k, T a, T b) { return refIntCombine(k, a, b); }
  static T scaled(T a, T s) { return refIntCombine(ReduceKind::Prod, a, s); }
  // The quotient truncated toward zero, wrapped to T.
  static T divided(T a, int d) { return static_cast<T>(static_cast<__int128>(a) / d); }
  static bool same(T got, T want) { return got == want; }
  static std::string show(T v) { return std::to_string(static_cast<long long>(v)); }
};

template <class T, weftDataType_t kT>
struct FloatType {
  using Storage = T;
  static constexpr weftDataType_t kType = kT;
  static T random(Rng& rng) {
    using L = std::numeric_limits<T>;
    const T specials[] = {0,
                          -T(0),
                          L::infinity(),
                          -L::infinity(),
                          L::quiet_NaN(),
                          -L::quiet_NaN(),
                          L::denorm_min(),
                          L::max(),
                          L::lowest(),
                          T(1),
                          T(-1)};
    if (rng() % 16 == 0) return specials[rng() % std::size(specials)];
    const T mantissa = std::uniform_real_distribution<T>(1, 2)(rng);
    const int exponent = static_cast<int>(rng() % 61) - 30;
    return std::ldexp((rng() & 1) ? -mantissa : mantissa, exponent);
  }
  static T reference(ReduceKind k, T a, T b) { return refCombine(k, a, b); }
  static T scaled(T a, T s) { return a * s; }
  static T divided(T a, int d) { return a / static_cast<T>(d); }
  // NaN payloads of two-NaN arithmetic are the hardware's business; any NaN will do.
  static bool same(T got, T want) {
    return (std::isnan(got) && std::isnan(want)) || std::memcmp(&got, &want, sizeof(T)) == 0;
  }
  static std::string show(T v) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
  }
};

template <const Narrow& kFormat, class S, weftDataType_t kT>
struct NarrowType {
  using Storage = S;
  static constexpr weftDataType_t kType = kT;
  static S random(Rng& rng) { return static_cast<S>(rng()); }  // every code, NaNs included
  static float value(S v) { return static_cast<float>(decode(kFormat, v)); }
  static S result(float r) {
    const double rounded = roundTo(kFormat, r);
    return std::isnan(rounded) ? static_cast<S>(signBit(kFormat) - 1)  // some NaN
                               : static_cast<S>(encode(kFormat, rounded));
  }
  // Computed in float, rounded once to the format.
  static S reference(ReduceKind k, S a, S b) { return result(refCombine(k, value(a), value(b))); }
  static S scaled(S a, S s) { return result(value(a) * value(s)); }
  static S divided(S a, int d) { return result(value(a) / static_cast<float>(d)); }
  static bool same(S got, S want) {
    if (isNanCode(kFormat, want)) return isNanCode(kFormat, got);
    return got == want;
  }
  static std::string show(S v) {
    std::ostringstream s;
    s << "0x" << std::hex << static_cast<unsigned>(v) << " (" << decode(kFormat, v) << ")";
    return s.str();
  }
};

using Int8 = IntType<int8_t, weftInt8>;
using Uint8 = IntType<uint8_t, weftUint8>;
using Int32 = IntType<int32_t, weftInt32>;
using Uint32 = IntType<uint32_t, weftUint32>;
using Int64 = IntType<int64_t, weftInt64>;
using Uint64 = IntType<uint64_t, weftUint64>;
using Float32 = FloatType<float, weftFloat32>;
using Float64 = FloatType<double, weftFloat64>;
using Half = NarrowType<kHalfFormat, uint16_t, weftFloat16>;
using Bfloat16 = NarrowType<kBfloat16Format, uint16_t, weftBfloat16>;
using E4m3 = NarrowType<kE4m3Format, uint8_t, weftFloat8e4m3>;
using E5m2 = NarrowType<kE5m2Format, uint8_t, weftFloat8e5m2>;

template <class F>
void forEveryType(F&& f) {
  f(Int8{});
  f(Uint8{});
  f(Int32{});
  f(Uint32{});
  f(Int64{});
  f(Uint64{});
  f(Half{});
  f(Float32{});
  f(Float64{});
  f(Bfloat16{});
  f(E4m3{});
  f(E5m2{});
}

// Where the output goes relative to the inputs.
enum class Placement { OutOfPlace, IntoA, IntoB, AllSame };
constexpr Placement kPlacements[] = {Placement::OutOfPlace, Placement::IntoA, Placement::IntoB,
                                     Placement::AllSame};
const char* placementName(Placement p) {
  switch (p) {
    case Placement::OutOfPlace: return "out of place";
    case Placement::IntoA: return "dst == a";
    case Placement::IntoB: return "dst == b";
    case Placement::AllSame: return "dst == a == b";
  }
  return "?";
}

template <class S>
std::vector<S> randomVector(size_t n, Rng& rng, S (*random)(Rng&)) {
  std::vector<S> v(n);
  for (S& x : v) x = random(rng);
  return v;
}

// Counts mismatches and reports the first few, so that a broken kernel does not flood the log.
struct Mismatches {
  int count = 0;
  void add(const std::string& what) {
    if (++count <= 5) FAIL_CHECK(what);
  }
};

// Runs one kernel call with inputs starting `offset` elements into their buffers (so both aligned
// and unaligned starts are seen) and checks every output element and every guard element.
template <class Ty>
void checkKernelCall(ReduceKind k, size_t n, Placement p, size_t offset, Rng& rng,
                     Mismatches& bad) {
  using S = typename Ty::Storage;
  const size_t total = offset + n + kGuard;
  std::vector<S> a = randomVector<S>(total, rng, Ty::random);
  std::vector<S> b = randomVector<S>(total, rng, Ty::random);
  std::vector<S> d = randomVector<S>(total, rng, Ty::random);
  if (p == Placement::AllSame) b = a;
  const std::vector<S> a0 = a, b0 = b, d0 = d;

  S* dst = d.data() + offset;
  const S* x = a.data() + offset;
  const S* y = b.data() + offset;
  std::vector<S>* written = &d;
  switch (p) {
    case Placement::OutOfPlace: break;
    case Placement::IntoA: dst = a.data() + offset, written = &a; break;
    case Placement::IntoB: dst = b.data() + offset, y = dst, written = &b; break;
    case Placement::AllSame: dst = a.data() + offset, y = dst, written = &a; break;
  }
  if (p == Placement::IntoA || p == Placement::AllSame) x = dst;

  ReduceFn fn = reduceKernel(Ty::kType, k);
  REQUIRE(fn != nullptr);
  fn(dst, x, y, n);

  const std::string where = std::string(datatypeName(Ty::kType)) + " " + kindName(k) +
                            " n=" + std::to_string(n) + " " + placementName(p) +
                            " offset=" + std::to_string(offset);
  for (size_t i = 0; i < n; ++i) {
    const S want = Ty::reference(k, a0[offset + i], b0[offset + i]);
    const S got = dst[i];
    if (!Ty::same(got, want)) {
      bad.add(where + ": element " + std::to_string(i) + " " + Ty::show(a0[offset + i]) + " " +
              kindName(k) + " " + Ty::show(b0[offset + i]) + " gave " + Ty::show(got) +
              ", expected " + Ty::show(want));
    }
  }
  for (const auto* buffer : {&a, &b, &d}) {
    const std::vector<S>& before = buffer == &a ? a0 : buffer == &b ? b0 : d0;
    for (size_t i = 0; i < total; ++i) {
      const bool inRange = buffer == written && i >= offset && i < offset + n;
      if (!inRange && std::memcmp(&(*buffer)[i], &before[i], sizeof(S)) != 0) {
        bad.add(where + ": wrote outside the output range at index " + std::to_string(i));
      }
    }
  }
}

template <class T>
T reduceOne(weftDataType_t type, ReduceKind k, T a, T b) {
  T out{};
  reduceKernel(type, k)(&out, &a, &b, 1);
  return out;
}

}  // namespace

TEST_CASE(
    "every datatype x op kernel matches a plainly computed reference at lengths 0 to 4099, "
    "in place and out of place, aligned or not") {
  Rng rng(20240601);
  forEveryType([&](auto type) {
    using Ty = decltype(type);
    Mismatches bad;
    for (ReduceKind k : kKinds) {
      for (size_t n : kLengths) {
        for (Placement p : kPlacements) {
          for (size_t offset : {0, 1}) checkKernelCall<Ty>(k, n, p, offset, rng, bad);
        }
      }
    }
    INFO(datatypeName(Ty::kType));
    CHECK(bad.count == 0);
  });
}

// reduceManyKernel over `sources` inputs of n elements, `offset` into their buffers, into dst ==
// source `into` or (into < 0) a buffer of its own; every output element against the plain
// reference folded left to right, and nothing outside the output range written.
template <class Ty>
void checkManyCall(ReduceKind k, int sources, size_t n, int into, size_t offset, Rng& rng,
                   Mismatches& bad) {
  using S = typename Ty::Storage;
  const size_t total = offset + n + kGuard;
  std::vector<std::vector<S>> in;
  for (int j = 0; j < sources; ++j) in.push_back(randomVector<S>(total, rng, Ty::random));
  std::vector<S> out = randomVector<S>(total, rng, Ty::random);
  const std::vector<std::vector<S>> in0 = in;
  const std::vector<S> out0 = out;
  std::vector<const void*> srcs;
  for (auto& v : in) srcs.push_back(v.data() + offset);
  S* dst = into >= 0 ? in[into].data() + offset : out.data() + offset;

  ReduceManyFn fn = reduceManyKernel(Ty::kType, k);
  REQUIRE(fn != nullptr);
  fn(dst, srcs.data(), sources, n);

  const std::string where =
      std::string(datatypeName(Ty::kType)) + " " + kindName(k) + " " + std::to_string(sources) +
      " sources n=" + std::to_string(n) +
      (into >= 0 ? " into source " + std::to_string(into) : std::string(" out of place")) +
      " offset=" + std::to_string(offset);
  for (size_t i = 0; i < n; ++i) {
    S want = in0[0][offset + i];
    for (int j = 1; j < sources; ++j) want = Ty::reference(k, want, in0[j][offset + i]);
    if (!Ty::same(dst[i], want)) {
      bad.add(where + ": element " + std::to_string(i) + " gave " + Ty::show(dst[i]) +
              ", expected " + Ty::show(want));
    }
  }
  for (int j = -1; j < sources; ++j) {
    const std::vector<S>& now = j < 0 ? out : in[j];
    const std::vector<S>& before = j < 0 ? out0 : in0[j];
    const bool written = j == into;
    for (size_t i = 0; i < total; ++i) {
      const bool inRange = written && i >= offset && i < offset + n;
      if (!inRange && std::memcmp(&now[i], &before[i], sizeof(S)) != 0)
        bad.add(where + ": wrote outside the output range at index " + std::to_string(i));
    }
  }
}

TEST_CASE(
    "every datatype x op reduceManyKernel folds 1 to 9 sources left to right as the plain "
    "reference does, past its tile size, into any source or out of place, aligned or not") {
  Rng rng(20261203);
  forEveryType([&](auto type) {
    using Ty = decltype(type);
    Mismatches bad;
    for (ReduceKind k : kKinds) {
      for (int sources = 1; sources <= 9; ++sources) {
        // 9001 elements: more than one 8 KiB tile of even 1-byte types.
        for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{9001}}) {
          // Out of place; into the first source, a middle one (in the first pass's four, or
          // past them from 7 sources on) and the last.
          for (int into : {-1, 0, sources / 2 + sources / 7, sources - 1}) {
            for (size_t offset : {0, 1}) checkManyCall<Ty>(k, sources, n, into, offset, rng, bad);
          }
        }
      }
    }
    INFO(datatypeName(Ty::kType));
    CHECK(bad.count == 0);
  });
}

TEST_CASE("WEFT_REDUCE_HALF_ISA holds the half, bfloat16 and E5M2 kernels back") {
  // ctest runs this binary with WEFT_REDUCE_HALF_ISA unset, f16c and none.
  const char* isa = std::getenv("WEFT_REDUCE_HALF_ISA");
  const std::string half = reduceKernelIsa(weftFloat16);
  const std::string bf16 = reduceKernelIsa(weftBfloat16);
  const std::string e5m2 = reduceKernelIsa(weftFloat8e5m2);
  INFO("half " << half << ", bfloat16 " << bf16 << ", e5m2 " << e5m2);
  CHECK(std::string(reduceKernelIsa(weftFloat32)) == "generic");
  if (isa && std::string(isa) == "none") {
    CHECK(half == "generic");
    CHECK(bf16 == "generic");
    CHECK(e5m2 == "generic");
  } else if (isa && std::string(isa) == "f16c") {
    CHECK(half != "avx512-fp16");
    CHECK(bf16 == "generic");
    CHECK(e5m2 == "generic");
  } else {
    CHECK((half == "avx512-fp16" || half == "f16c" || half == "generic"));
    CHECK((bf16 == "avx512-bf16" || bf16 == "generic"));
    CHECK((e5m2 == "avx512-fp16" || e5m2 == "generic"));
  }
}

TEST_CASE("reduceManyKernel returns null for datatypes -1 and 12") {
  for (ReduceKind k : kKinds) {
    CHECK(reduceManyKernel(static_cast<weftDataType_t>(-1), k) == nullptr);
    CHECK(reduceManyKernel(static_cast<weftDataType_t>(12), k) == nullptr);
  }
}

TEST_CASE("reduceKernel returns null for datatypes -1 and 12") {
  for (ReduceKind k : kKinds) {
    CHECK(reduceKernel(static_cast<weftDataType_t>(-1), k) == nullptr);
    CHECK(reduceKernel(static_cast<weftDataType_t>(12), k) == nullptr);
  }
}

TEST_CASE("integer kernels wrap around like two's complement") {
  CHECK(+reduceOne<int8_t>(weftInt8, ReduceKind::Sum, 127, 1) == -128);
  CHECK(+reduceOne<int8_t>(weftInt8, ReduceKind::Sum, -128, -1) == 127);
  CHECK(+reduceOne<int8_t>(weftInt8, ReduceKind::Prod, -128, -1) == -128);
  CHECK(+reduceOne<int8_t>(weftInt8, ReduceKind::Prod, 16, 16) == 0);
  CHECK(+reduceOne<uint8_t>(weftUint8, ReduceKind::Prod, 255, 2) == 254);
  CHECK(+reduceOne<uint8_t>(weftUint8, ReduceKind::Sum, 255, 1) == 0);
  CHECK(reduceOne<int32_t>(weftInt32, ReduceKind::Sum, INT32_MAX, 1) == INT32_MIN);
  CHECK(reduceOne<int32_t>(weftInt32, ReduceKind::Prod, 65536, 65536) == 0);
  CHECK(reduceOne<int32_t>(weftInt32, ReduceKind::Prod, INT32_MIN, -1) == INT32_MIN);
  CHECK(reduceOne<uint32_t>(weftUint32, ReduceKind::Sum, UINT32_MAX, 2) == 1);
  CHECK(reduceOne<int64_t>(weftInt64, ReduceKind::Sum, INT64_MAX, 1) == INT64_MIN);
  CHECK(reduceOne<int64_t>(weftInt64, ReduceKind::Prod, int64_t{1} << 32, int64_t{1} << 32) == 0);
  CHECK(reduceOne<uint64_t>(weftUint64, ReduceKind::Sum, UINT64_MAX, 1) == 0);
  CHECK(reduceOne<uint64_t>(weftUint64, ReduceKind::Prod, UINT64_MAX, UINT64_MAX) == 1);
  // Signed and unsigned order differ for the same bits.
  CHECK(+reduceOne<int8_t>(weftInt8, ReduceKind::Max, -1, 1) == 1);
  CHECK(+reduceOne<uint8_t>(weftUint8, ReduceKind::Max, 255, 1) == 255);
  CHECK(reduceOne<int64_t>(weftInt64, ReduceKind::Min, INT64_MIN, 0) == INT64_MIN);
  CHECK(reduceOne<uint64_t>(weftUint64, ReduceKind::Max, UINT64_MAX, 0) == UINT64_MAX);
}

TEST_CASE(
    "floating max and min ignore a NaN operand, give NaN only for two NaNs, and return "
    "the first of two equal zeros, in the vector loop and the tail alike") {
  // 19 elements: two 8-wide vector steps and a tail of 3, all holding the same pair.
  constexpr size_t n = 19;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    float a, b, max, min;
  };
  const Case cases[] = {
      {nan, 1.0f, 1.0f, 1.0f},
      {1.0f, nan, 1.0f, 1.0f},
      {nan, nan, nan, nan},
      {0.0f, -0.0f, 0.0f, 0.0f},
      {-0.0f, 0.0f, -0.0f, -0.0f},
      {-2.0f, 3.0f, 3.0f, -2.0f},
      {-INFINITY, nan, -INFINITY, -INFINITY},
  };
  auto sameBits = [](float got, float want) {
    return (std::isnan(got) && std::isnan(want)) ||
           std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want);
  };
  for (const Case& c : cases) {
    INFO("a=" << c.a << " b=" << c.b);
    for (ReduceKind k : {ReduceKind::Max, ReduceKind::Min}) {
      const float want = k == ReduceKind::Max ? c.max : c.min;
      // float32 and float64
      std::vector<float> a(n, c.a), b(n, c.b), d(n);
      reduceKernel(weftFloat32, k)(d.data(), a.data(), b.data(), n);
      for (float v : d) CHECK(sameBits(v, want));
      std::vector<double> ad(n, c.a), bd(n, c.b), dd(n);
      reduceKernel(weftFloat64, k)(dd.data(), ad.data(), bd.data(), n);
      for (double v : dd) CHECK(sameBits(static_cast<float>(v), want));
      // half and bfloat16: all of these values are representable.
      std::vector<uint16_t> ah(n, floatToHalf(c.a)), bh(n, floatToHalf(c.b)), dh(n);
      reduceKernel(weftFloat16, k)(dh.data(), ah.data(), bh.data(), n);
      for (uint16_t v : dh) CHECK(sameBits(halfToFloat(v), want));
      std::vector<uint16_t> ab(n, floatToBfloat16(c.a)), bb(n, floatToBfloat16(c.b)), db(n);
      reduceKernel(weftBfloat16, k)(db.data(), ab.data(), bb.data(), n);
      for (uint16_t v : db) CHECK(sameBits(bfloat16ToFloat(v), want));
    }
  }
}

TEST_CASE(
    "the vector half and bfloat16 kernels agree bit for bit with the scalar conversions "
    "for every pattern, NaN payloads included") {
  // a runs through all 2^16 patterns; b is a shuffle of them, several times over.
  constexpr size_t n = 1 << 16;
  std::vector<uint16_t> a(n);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<uint16_t>(i);
  Rng rng(7);
  struct Codec {
    weftDataType_t type;
    float (*toFloat)(uint16_t) noexcept;
    uint16_t (*fromFloat)(float) noexcept;
    uint16_t nanMask;  // exponent bits all set and a mantissa bit: NaN test
  };
  const Codec codecs[] = {{weftFloat16, halfToFloat, floatToHalf, 0x7c00},
                          {weftBfloat16, bfloat16ToFloat, floatToBfloat16, 0x7f80}};
  for (const Codec& codec : codecs) {
    INFO(datatypeName(codec.type));
    const auto isNan = [&](uint16_t v) {
      return (v & codec.nanMask) == codec.nanMask && (v & ~codec.nanMask & 0x7fff) != 0;
    };
    Mismatches bad;
    for (int round = 0; round < 4; ++round) {
      std::vector<uint16_t> b = a;
      std::shuffle(b.begin(), b.end(), rng);
      for (ReduceKind k : kKinds) {
        std::vector<uint16_t> d(n);
        reduceKernel(codec.type, k)(d.data(), a.data(), b.data(), n);
        for (size_t i = 0; i < n; ++i) {
          const float x = codec.toFloat(a[i]);
          const float y = codec.toFloat(b[i]);
          const uint16_t want = codec.fromFloat(refCombine(k, x, y));
          // Which of two NaNs an addition or product propagates is the hardware's choice.
          const bool eitherNan =
              isNan(a[i]) && isNan(b[i]) && (k == ReduceKind::Sum || k == ReduceKind::Prod);
          if (eitherNan ? !isNan(d[i]) : d[i] != want) {
            std::ostringstream s;
            s << std::hex << "0x" << a[i] << " " << kindName(k) << " 0x" << b[i] << " gave 0x"
              << d[i] << ", scalar path gives 0x" << want;
            bad.add(s.str());
          }
        }
      }
    }
    CHECK(bad.count == 0);
  }
}

TEST_CASE("fp8 kernels match the reference for all 2^16 input pairs of each op") {
  auto checkAllPairs = [](auto type) {
    using Ty = decltype(type);
    INFO(datatypeName(Ty::kType));
    std::vector<uint8_t> a(1 << 16), b(1 << 16), d(1 << 16);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<uint8_t>(i >> 8);
      b[i] = static_cast<uint8_t>(i);
    }
    Mismatches bad;
    for (ReduceKind k : kKinds) {
      reduceKernel(Ty::kType, k)(d.data(), a.data(), b.data(), d.size());
      for (size_t i = 0; i < d.size(); ++i) {
        const uint8_t want = Ty::reference(k, a[i], b[i]);
        if (!Ty::same(d[i], want)) {
          bad.add(Ty::show(a[i]) + " " + kindName(k) + " " + Ty::show(b[i]) + " gave " +
                  Ty::show(d[i]) + ", expected " + Ty::show(want));
        }
      }
    }
    CHECK(bad.count == 0);
  };
  checkAllPairs(E4m3{});
  checkAllPairs(E5m2{});
}

TEST_CASE("scale multiplies every element by one scalar of the same datatype, in place too") {
  Rng rng(99);
  forEveryType([&](auto type) {
    using Ty = decltype(type);
    using S = typename Ty::Storage;
    INFO(datatypeName(Ty::kType));
    Mismatches bad;
    for (size_t n : kLengths) {
      for (bool inPlace : {false, true}) {
        const std::vector<S> src = randomVector<S>(n + kGuard, rng, Ty::random);
        std::vector<S> dst = inPlace ? src : randomVector<S>(n + kGuard, rng, Ty::random);
        const std::vector<S> dst0 = dst;
        const S scalar = Ty::random(rng);
        scale(dst.data(), inPlace ? dst.data() : src.data(), n, Ty::kType, &scalar);
        for (size_t i = 0; i < n; ++i) {
          const S want = Ty::scaled(src[i], scalar);
          if (!Ty::same(dst[i], want)) {
            bad.add("n=" + std::to_string(n) + " " + Ty::show(src[i]) + " * " + Ty::show(scalar) +
                    " gave " + Ty::show(dst[i]) + ", expected " + Ty::show(want));
          }
        }
        for (size_t i = n; i < n + kGuard; ++i) {
          if (std::memcmp(&dst[i], &dst0[i], sizeof(S)) != 0) bad.add("wrote past the end");
        }
      }
    }
    CHECK(bad.count == 0);
  });
}

TEST_CASE("divide truncates integers toward zero and rounds floating types once") {
  Rng rng(5);
  forEveryType([&](auto type) {
    using Ty = decltype(type);
    using S = typename Ty::Storage;
    INFO(datatypeName(Ty::kType));
    Mismatches bad;
    for (int divisor : {1, 2, 3, 7, 8, -1, -3, 1000}) {
      for (size_t n : kLengths) {
        const std::vector<S> src = randomVector<S>(n + kGuard, rng, Ty::random);
        std::vector<S> dst = src;
        divide(dst.data(), dst.data(), n, Ty::kType, divisor);
        for (size_t i = 0; i < n; ++i) {
          const S want = Ty::divided(src[i], divisor);
          if (!Ty::same(dst[i], want)) {
            bad.add(Ty::show(src[i]) + " / " + std::to_string(divisor) + " gave " +
                    Ty::show(dst[i]) + ", expected " + Ty::show(want));
          }
        }
        for (size_t i = n; i < n + kGuard; ++i) {
          if (std::memcmp(&dst[i], &src[i], sizeof(S)) != 0) bad.add("wrote past the end");
        }
      }
    }
    CHECK(bad.count == 0);
  });
}

TEST_CASE(
    "divide handles the integer corner cases: negative quotients, MIN / -1, unsigned by a "
    "negative divisor") {
  auto div1 = [](auto v, weftDataType_t type, int d) {
    divide(&v, &v, 1, type, d);
    return v;
  };
  CHECK(+div1(int8_t{-7}, weftInt8, 2) == -3);
  CHECK(+div1(int8_t{7}, weftInt8, -2) == -3);
  CHECK(+div1(int8_t{-128}, weftInt8, -1) == -128);
  CHECK(+div1(uint8_t{200}, weftUint8, 3) == 66);
  CHECK(+div1(uint8_t{200}, weftUint8, 300) == 0);
  CHECK(div1(int32_t{INT32_MIN}, weftInt32, -1) == INT32_MIN);
  CHECK(div1(int64_t{INT64_MIN}, weftInt64, -1) == INT64_MIN);
  CHECK(div1(int64_t{INT64_MIN}, weftInt64, 2) == INT64_MIN / 2);
  CHECK(div1(uint32_t{10}, weftUint32, -2) == static_cast<uint32_t>(-5));
  // -(UINT64_MAX / 2^31), wrapped.
  CHECK(div1(uint64_t{UINT64_MAX}, weftUint64, INT_MIN) == uint64_t{0} - ((uint64_t{1} << 33) - 1));
}

namespace {

// Plain C++ division with the two cases reduce.hpp defines where C++ does not: MIN / -1 wraps to
// MIN, and an unsigned value divided by a negative divisor is the negated quotient of the
// magnitudes, wrapped.
template <class T>
T plainQuotient(T v, int d) {
  if constexpr (std::is_signed_v<T>) {
    if (d == -1) return v == std::numeric_limits<T>::min() ? v : static_cast<T>(-v);
    if constexpr (sizeof(T) < sizeof(int)) return static_cast<T>(v / d);
    return static_cast<T>(v / static_cast<T>(d));
  } else {
    const uint64_t magnitude = d < 0 ? uint64_t(0) - uint64_t(int64_t{d}) : uint64_t(d);
    const auto q = static_cast<T>(v / magnitude);
    return d < 0 ? static_cast<T>(T(0) - q) : q;
  }
}

// Divides `values` (laid out one element past an unaligned start, so vector loops and their
// tails both run) by `divisor`, in place and out of place, and compares with plainQuotient.
template <class T>
void checkDivide(weftDataType_t type, const std::vector<T>& values, int divisor, Mismatches& bad) {
  std::vector<T> in(values.size() + 2, T(0x5a)), out(values.size() + 2, T(0x5a));
  for (size_t i = 0; i < values.size(); ++i) in[i + 1] = values[i];
  divide(out.data() + 1, in.data() + 1, values.size(), type, divisor);
  divide(in.data() + 1, in.data() + 1, values.size(), type, divisor);
  for (size_t i = 0; i < values.size(); ++i) {
    const T want = plainQuotient(values[i], divisor);
    for (const T got : {out[i + 1], in[i + 1]}) {
      if (got != want) {
        bad.add(std::string(datatypeName(type)) + ": " + std::to_string(+values[i]) + " / " +
                std::to_string(divisor) + " gave " + std::to_string(+got) + ", expected " +
                std::to_string(+want));
      }
    }
  }
  if (out.front() != T(0x5a) || out.back() != T(0x5a) || in.front() != T(0x5a) ||
      in.back() != T(0x5a)) {
    bad.add(std::string(datatypeName(type)) + ": divide wrote outside its range");
  }
}

// Divisors where a fast division would go wrong if it could: powers of two and their
// neighbours, the extremes of int, and 2^24 (where float stops holding every integer).
std::vector<int> edgeDivisors() {
  std::vector<int> d = {INT_MAX, INT_MIN, INT_MIN + 1, (1 << 24) - 1, 1 << 24, (1 << 24) + 1};
  for (int k = 1; k < 31; ++k) {
    for (int delta : {-1, 0, 1}) {
      d.push_back((1 << k) + delta);
      d.push_back(-((1 << k) + delta));
    }
  }
  return d;
}

}  // namespace

TEST_CASE("divide of 8-bit integers matches C++ division for every value and divisor +-1..257") {
  std::vector<int> divisors;
  for (int d = 1; d <= 257; ++d) {
    divisors.push_back(d);
    divisors.push_back(-d);
  }
  for (int d : edgeDivisors()) divisors.push_back(d);
  std::vector<int8_t> signedValues;
  std::vector<uint8_t> unsignedValues;
  for (int v = 0; v < 256; ++v) {
    signedValues.push_back(static_cast<int8_t>(v));
    unsignedValues.push_back(static_cast<uint8_t>(v));
  }
  Mismatches bad;
  for (int d : divisors) {
    checkDivide(weftInt8, signedValues, d, bad);
    checkDivide(weftUint8, unsignedValues, d, bad);
  }
  CHECK(bad.count == 0);
}

TEST_CASE(
    "divide of 32- and 64-bit integers matches C++ division for random values, extremes, exact "
    "multiples of the divisor and their neighbours") {
  Rng rng(11);
  // Divisors of every magnitude 2^0..2^31, both signs, plus the edge cases.
  std::vector<int> divisors = edgeDivisors();
  for (int i = 0; i < 300; ++i) {
    const int bits = static_cast<int>(rng() % 31) + 1;
    const auto magnitude = static_cast<int>(rng() & ((uint64_t{1} << bits) - 1));
    if (magnitude != 0) divisors.push_back((rng() & 1) ? -magnitude : magnitude);
  }
  // Values: the extremes and their neighbours, small numbers, and random values of every width.
  auto values = [&rng]<class T>(T) {
    using L = std::numeric_limits<T>;
    std::vector<T> v = {
        L::min(), T(L::min() + 1), L::max(), T(L::max() - 1), T(0), T(1), T(-1), T(2), T(-2)};
    for (int i = 0; i < 1500; ++i) {
      using U = std::make_unsigned_t<T>;
      const int bits = static_cast<int>(rng() % (8 * sizeof(T))) + 1;
      const auto magnitude = static_cast<U>(rng() >> (64 - bits));
      v.push_back(static_cast<T>((rng() & 1) ? U(U(0) - magnitude) : magnitude));
    }
    return v;
  };
  // Plus, per divisor, exact multiples q*d and their neighbours q*d +- 1, q random and the
  // largest: where a quotient computed through a reciprocal would be off by one if it could.
  auto withMultiples = [&rng]<class T>(std::vector<T> v, int d) {
    using L = std::numeric_limits<T>;
    const __int128 magnitude = d < 0 ? -static_cast<__int128>(d) : d;
    const __int128 qMax = static_cast<__int128>(L::max()) / magnitude;
    for (int i = 0; i <= 40; ++i) {
      __int128 q =
          i == 0 || qMax == 0 ? qMax : static_cast<__int128>(rng() % static_cast<uint64_t>(qMax));
      if (std::is_signed_v<T> && (rng() & 1)) q = -q;
      for (int delta : {-1, 0, 1}) {
        const __int128 x = q * magnitude + delta;
        if (x >= L::min() && x <= L::max()) v.push_back(static_cast<T>(x));
      }
    }
    return v;
  };
  const auto i32 = values(int32_t{});
  const auto u32 = values(uint32_t{});
  const auto i64 = values(int64_t{});
  const auto u64 = values(uint64_t{});
  Mismatches bad;
  for (int d : divisors) {
    checkDivide(weftInt32, withMultiples(i32, d), d, bad);
    checkDivide(weftUint32, withMultiples(u32, d), d, bad);
    checkDivide(weftInt64, withMultiples(i64, d), d, bad);
    checkDivide(weftUint64, withMultiples(u64, d), d, bad);
  }
  CHECK(bad.count == 0);
}

TEST_CASE("scale, divide and reciprocal write nothing for datatypes -1 and 12") {
  for (int value : {-1, 12}) {
    INFO(value);
    const auto type = static_cast<weftDataType_t>(value);
    std::vector<unsigned char> buffer(64, 0xa5);
    const double scalar = 2;
    scale(buffer.data(), buffer.data(), 8, type, &scalar);
    divide(buffer.data(), buffer.data(), 8, type, 3);
    reciprocal(buffer.data(), type, 4);
    CHECK(std::all_of(buffer.begin(), buffer.end(), [](unsigned char c) { return c == 0xa5; }));
  }
}

TEST_CASE("reciprocal writes 1/n correctly rounded to the floating type, and zero for integers") {
  // 8283, 18631, 55831 and 133683 are n whose 1/n, rounded to float first, would land on a half
  // midpoint and then round the wrong way; 555767 does the same for bfloat16.
  for (int n : {1, 2, 3, 4, 7, 8, 10, 1000, 8283, 18631, 55831, 133683, 555767, 1 << 30}) {
    INFO("n=" << n);
    float f;
    reciprocal(&f, weftFloat32, n);
    CHECK(f == 1.0f / static_cast<float>(n));
    double d;
    reciprocal(&d, weftFloat64, n);
    CHECK(d == 1.0 / n);
    const double exact = 1.0 / n;
    uint16_t h;
    reciprocal(&h, weftFloat16, n);
    CHECK(h == encode(kHalfFormat, roundTo(kHalfFormat, exact)));
    uint16_t bf;
    reciprocal(&bf, weftBfloat16, n);
    CHECK(bf == encode(kBfloat16Format, roundTo(kBfloat16Format, exact)));
    uint8_t e4;
    reciprocal(&e4, weftFloat8e4m3, n);
    CHECK(+e4 == +encode(kE4m3Format, roundTo(kE4m3Format, exact)));
    uint8_t e5;
    reciprocal(&e5, weftFloat8e5m2, n);
    CHECK(+e5 == +encode(kE5m2Format, roundTo(kE5m2Format, exact)));
  }
  Mismatches bad;
  for (int n = 1; n <= 200000; ++n) {
    uint16_t h;
    reciprocal(&h, weftFloat16, n);
    const uint32_t want = encode(kHalfFormat, roundTo(kHalfFormat, 1.0 / n));
    if (h != want) bad.add("half 1/" + std::to_string(n) + " gave " + Half::show(h));
  }
  CHECK(bad.count == 0);
  // Hand-derived codes of 1/2 and 1/4.
  uint16_t h;
  reciprocal(&h, weftFloat16, 2);
  CHECK(h == 0x3800);
  reciprocal(&h, weftFloat16, 4);
  CHECK(h == 0x3400);
  reciprocal(&h, weftBfloat16, 2);
  CHECK(h == 0x3f00);
  uint8_t q;
  reciprocal(&q, weftFloat8e4m3, 2);
  CHECK(+q == 0x30);
  reciprocal(&q, weftFloat8e5m2, 2);
  CHECK(+q == 0x38);
  // Integers have no 1/n: callers use divide(); the element is zeroed, all of it.
  for (weftDataType_t t : {weftInt8, weftUint8, weftInt32, weftUint32, weftInt64, weftUint64}) {
    INFO(datatypeName(t));
    unsigned char out[16];
    std::memset(out, 0xa5, sizeof out);
    reciprocal(out, t, 4);
    for (size_t i = 0; i < sizeof out; ++i) CHECK(out[i] == (i < datatypeSize(t) ? 0 : 0xa5));
  }
}
