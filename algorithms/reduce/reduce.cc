#include "algorithms/reduce/reduce.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "algorithms/reduce/datatype.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define WEFT_REDUCE_X86 1
#else
#define WEFT_REDUCE_X86 0
#endif

// The AVX512-FP16 kernels need headers that declare __m512h for functions with a target
// attribute: GCC 12 has them, clang 14 (the sanitizer build's) only with -mavx512fp16 for the
// whole file, which the other kernels must not get. Clang from 16 on has them.
#if WEFT_REDUCE_X86 && ((defined(__clang__) && __clang_major__ >= 16) || \
                        (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#define WEFT_REDUCE_FP16 1
#else
#define WEFT_REDUCE_FP16 0
#endif

// ThreadSanitizer builds go without: the loader runs ifunc resolvers while relocating the
// library, before libtsan is initialised, and the instrumented resolver crashes every program
// that links weft at start-up (GCC 12).
#if WEFT_REDUCE_X86 && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
// GCC compiles each hot loop three times and the dynamic loader picks one for the CPU (ifunc).
// avx512f lets GCC use 512-bit vectors for 32- and 64-bit elements; byte elements stay at 256
// bits (that needs avx512bw). Clang (14) does not support target_clones on templates, so a
// clang build gets the baseline (SSE2) vector loops only.
#define WEFT_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
// GCC 12 at -O2 (RelWithDebInfo) uses the "very cheap" vectoriser cost model, which refuses every
// loop that needs a runtime alias check, that is all of these: ask for the -O3 behaviour on just
// the kernels so that they vectorise whatever the build type. Clang vectorises them at -O2.
#define WEFT_VECTORIZE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define WEFT_MULTIVERSION
#define WEFT_VECTORIZE
#endif

// Written as plain index loops over pointers that may alias (dst == a or dst == b): GCC versions
// the loop with an overlap check that exact aliasing passes (dst - a is 0, outside the range of
// distances that would break a vector step), so the in-place call, the common one in a
// collective, runs the vector loop too. No __restrict__: it would be a lie for in-place calls.

namespace weft {
namespace {

// --- element-wise operations --------------------------------------------------------------------

// Integers wrap: the arithmetic is done in the unsigned type of the same width (no signed overflow
// UB) and converted back, which C++20 defines as modular.
//
// Floating Max/Min follow NCCL's GPU kernels, which use fmaxf/fminf (IEEE 754-2008 maxNum/minNum):
// a NaN operand is ignored in favour of the other one, and only two NaNs give NaN (b's). Equal
// operands, +0 and -0 included, give a. Written as a compare and select so that it vectorises.
template <ReduceKind kKind, class T>
[[gnu::always_inline]] inline T combine(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    if constexpr (kKind == ReduceKind::Sum) return static_cast<T>(static_cast<U>(U(a) + U(b)));
    if constexpr (kKind == ReduceKind::Prod) return static_cast<T>(static_cast<U>(U(a) * U(b)));
    if constexpr (kKind == ReduceKind::Max) return a < b ? b : a;
    if constexpr (kKind == ReduceKind::Min) return b < a ? b : a;
  } else {
    if constexpr (kKind == ReduceKind::Sum) return a + b;
    if constexpr (kKind == ReduceKind::Prod) return a * b;
    if constexpr (kKind == ReduceKind::Max) return (b > a || a != a) ? b : a;
    if constexpr (kKind == ReduceKind::Min) return (b < a || a != a) ? b : a;
  }
}

// --- codecs: how a reduced-precision type is stored and computed (in float) ----------------------

struct HalfCodec {
  using Storage = uint16_t;
  static float decode(uint16_t v) { return halfToFloat(v); }
  static uint16_t encode(float f) { return floatToHalf(f); }
};

// The same arithmetic as bfloat16ToFloat/floatToBfloat16, written inline and branch-free so that
// GCC vectorises whole bfloat16 loops. The tests hold the two to the same bits.
struct Bfloat16Codec {
  using Storage = uint16_t;
  [[gnu::always_inline]] static float decode(uint16_t v) {
    return std::bit_cast<float>(static_cast<uint32_t>(v) << 16);
  }
  [[gnu::always_inline]] static uint16_t encode(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const uint32_t quietNan = (bits >> 16) | 0x40u;
    return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);
  }
};

// fp8 decodes through a 256-entry table; encoding is the scalar reference conversion.
template <float (*kToFloat)(uint8_t) noexcept>
const std::array<float, 256>& fp8Table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (unsigned v = 0; v < 256; ++v) t[v] = kToFloat(static_cast<uint8_t>(v));
    return t;
  }();
  return table;
}

struct Fp8e4m3Codec {
  using Storage = uint8_t;
  static float decode(uint8_t v) { return fp8Table<fp8e4m3ToFloat>()[v]; }
  static uint8_t encode(float f) { return floatToFp8e4m3(f); }
};

struct Fp8e5m2Codec {
  using Storage = uint8_t;
  static float decode(uint8_t v) { return fp8Table<fp8e5m2ToFloat>()[v]; }
  static uint8_t encode(float f) { return floatToFp8e5m2(f); }
};

// --- loops ---------------------------------------------------------------------------------------

template <class T, ReduceKind kKind>
WEFT_MULTIVERSION WEFT_VECTORIZE void reduceNative(void* dst, const void* a, const void* b,
                                                   size_t count) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < count; ++i) d[i] = combine<kKind>(x[i], y[i]);
}

template <ReduceKind kKind>
WEFT_MULTIVERSION WEFT_VECTORIZE void reduceBfloat16(void* dst, const void* a, const void* b,
                                                     size_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < count; ++i) {
    d[i] = Bfloat16Codec::encode(
        combine<kKind>(Bfloat16Codec::decode(x[i]), Bfloat16Codec::decode(y[i])));
  }
}

// Scalar loop for half without F16C and for the tails of the F16C loops.
template <class Codec, ReduceKind kKind>
void reduceNarrow(void* dst, const void* a, const void* b, size_t count) {
  using S = typename Codec::Storage;
  S* d = static_cast<S*>(dst);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
  for (size_t i = 0; i < count; ++i) {
    d[i] = Codec::encode(combine<kKind>(Codec::decode(x[i]), Codec::decode(y[i])));
  }
}

// fp8 has only 2^16 input pairs, so each op is a lookup in a 64 KiB table of results computed
// once, on first use, by the scalar reference path (hence identical to it by construction). The
// conversion per element costs several times more. The table is static storage: nothing is
// allocated, and after the first call the only overhead is the initialisation guard's load.
template <class Codec, ReduceKind kKind>
const std::array<uint8_t, 1 << 16>& fp8Results() {
  static const std::array<uint8_t, 1 << 16> table = [] {
    std::array<uint8_t, 1 << 16> t{};
    for (unsigned a = 0; a < 256; ++a) {
      for (unsigned b = 0; b < 256; ++b) {
        t[a << 8 | b] = Codec::encode(combine<kKind>(Codec::decode(static_cast<uint8_t>(a)),
                                                     Codec::decode(static_cast<uint8_t>(b))));
      }
    }
    return t;
  }();
  return table;
}

template <class Codec, ReduceKind kKind>
void reduceFp8(void* dst, const void* a, const void* b, size_t count) {
  const std::array<uint8_t, 1 << 16>& results = fp8Results<Codec, kKind>();
  auto* d = static_cast<uint8_t*>(dst);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < count; ++i) d[i] = results[static_cast<size_t>(x[i]) << 8 | y[i]];
}

// --- folds: one pass over 2 to 4 sources (reduceManyKernel) --------------------------------------
//
// fold<k>(dst, srcs, count): dst[i] = ((srcs[0][i] op srcs[1][i]) op srcs[2][i]) op srcs[3][i],
// for the first k sources, rounding after every operation as the binary kernels do. Every source
// element is read before dst[i] is written, so dst may be any of the k sources.

// The first four sources as S*; those past kSources alias srcs[1] and are never read.
template <class S, int kSources>
[[gnu::always_inline]] inline std::array<const S*, 4> foldSources(const void* const* srcs) {
  return {static_cast<const S*>(srcs[0]), static_cast<const S*>(srcs[1]),
          static_cast<const S*>(srcs[kSources > 2 ? 2 : 1]),
          static_cast<const S*>(srcs[kSources > 3 ? 3 : 1])};
}

// The sources `done` elements on: where a vector loop hands the tail to a scalar one.
template <class S, int kSources>
std::array<const void*, kSources> foldTail(const void* const* srcs, size_t done) {
  std::array<const void*, kSources> rest;
  for (int k = 0; k < kSources; ++k) rest[k] = static_cast<const S*>(srcs[k]) + done;
  return rest;
}

template <class T, ReduceKind kKind, int kSources>
WEFT_MULTIVERSION WEFT_VECTORIZE void foldNative(void* dst, const void* const* srcs, size_t count) {
  T* d = static_cast<T*>(dst);
  const auto [x0, x1, x2, x3] = foldSources<T, kSources>(srcs);
  for (size_t i = 0; i < count; ++i) {
    T v = combine<kKind>(x0[i], x1[i]);
    if constexpr (kSources > 2) v = combine<kKind>(v, x2[i]);
    if constexpr (kSources > 3) v = combine<kKind>(v, x3[i]);
    d[i] = v;
  }
}

template <ReduceKind kKind, int kSources>
WEFT_MULTIVERSION WEFT_VECTORIZE void foldBfloat16(void* dst, const void* const* srcs,
                                                   size_t count) {
  using C = Bfloat16Codec;
  auto* d = static_cast<uint16_t*>(dst);
  const auto [x0, x1, x2, x3] = foldSources<uint16_t, kSources>(srcs);
  for (size_t i = 0; i < count; ++i) {
    uint16_t v = C::encode(combine<kKind>(C::decode(x0[i]), C::decode(x1[i])));
    if constexpr (kSources > 2) v = C::encode(combine<kKind>(C::decode(v), C::decode(x2[i])));
    if constexpr (kSources > 3) v = C::encode(combine<kKind>(C::decode(v), C::decode(x3[i])));
    d[i] = v;
  }
}

template <class Codec, ReduceKind kKind, int kSources>
void foldNarrow(void* dst, const void* const* srcs, size_t count) {
  using S = typename Codec::Storage;
  S* d = static_cast<S*>(dst);
  for (size_t i = 0; i < count; ++i) {
    S v = static_cast<const S*>(srcs[0])[i];
    for (int k = 1; k < kSources; ++k)
      v = Codec::encode(
          combine<kKind>(Codec::decode(v), Codec::decode(static_cast<const S*>(srcs[k])[i])));
    d[i] = v;
  }
}

template <class Codec, ReduceKind kKind, int kSources>
void foldFp8(void* dst, const void* const* srcs, size_t count) {
  const std::array<uint8_t, 1 << 16>& results = fp8Results<Codec, kKind>();
  auto* d = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < count; ++i) {
    uint8_t v = static_cast<const uint8_t*>(srcs[0])[i];
    for (int k = 1; k < kSources; ++k)
      v = results[static_cast<size_t>(v) << 8 | static_cast<const uint8_t*>(srcs[k])[i]];
    d[i] = v;
  }
}

// dst[i] = f(src[i]) in the native type.
template <class T, class F>
[[gnu::always_inline]] inline void mapNative(void* dst, const void* src, size_t count, F f) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  for (size_t i = 0; i < count; ++i) d[i] = f(s[i]);
}

// dst[i] = encode(f(decode(src[i]))).
template <class Codec, class F>
[[gnu::always_inline]] inline void mapNarrow(void* dst, const void* src, size_t count, F f) {
  using S = typename Codec::Storage;
  S* d = static_cast<S*>(dst);
  const S* s = static_cast<const S*>(src);
  for (size_t i = 0; i < count; ++i) d[i] = Codec::encode(f(Codec::decode(s[i])));
}

template <class T>
WEFT_MULTIVERSION WEFT_VECTORIZE void scaleNative(void* dst, const void* src, size_t count,
                                                  T scalar) {
  mapNative<T>(dst, src, count, [scalar](T v) { return combine<ReduceKind::Prod>(v, scalar); });
}

template <class T>
WEFT_MULTIVERSION WEFT_VECTORIZE void divideFloating(void* dst, const void* src, size_t count,
                                                     T divisor) {
  mapNative<T>(dst, src, count, [divisor](T v) { return v / divisor; });
}

// --- integer division (the last step of integer Avg) --------------------------------------------
//
// Semantics (reduce.hpp): the quotient truncated toward zero, wrapped to T; MIN / -1 is MIN and an
// unsigned element divided by a negative divisor is the negated quotient of the magnitudes. No
// vector integer division exists and a scalar 64-bit division costs tens of cycles, so:
// - 8- and 32-bit types multiply by a reciprocal rounded slightly up, in float or double
//   (vectorised), which gives the exact truncated quotient; see below.
// - 64-bit types multiply by a "magic" reciprocal (Granlund and Montgomery, "Division by
//   invariant integers using multiplication", PLDI 1994, figures 4.1 and 5.2): one 64x64->128
//   multiply per element instead of a division. Scalar, but several times faster.
// Divisors 1 and -1 are a copy and a wrapping negation for every type.
//
// Why the reciprocal gives the exact truncated quotient. F is float or double with unit roundoff
// u (2^-24, 2^-53); v and d (|d| >= 2) are integers held exactly in F, |v| < 2^k; x = v / d.
// r = fl(1/|d|) is a normal number within a factor (1 +- u) of 1/|d|, and r+ is r raised by 4
// steps of its bit pattern: r+ - r lies between 4u r and 8u r (one ulp of r is between u r and
// 2u r; a step into the next binade, twice as coarse, still keeps the sum under 8u r). So
//   (1 + 3u - 4u^2) / |d| <= (1 - u)(1 + 4u) / |d| <= r+ <= (1 + u)(1 + 8u) / |d|.
// y = fl(|v| r+) is within a factor (1 +- u) of |v| r+, hence
//   y >= |x| (1 + 3u - 4u^2)(1 - u) >= |x| (1 + 2u - 7u^2) >= |x|,
//   y <= |x| (1 + 9u + 8u^2)(1 + u) <= |x| (1 + 11u) < |x| + 11u 2^k / |d|.
// With 11u 2^k < 1 that is |x| <= y < |x| + 1/|d|. If |x| is an integer, 1/|d| <= 1/2 and
// trunc(y) = |x|. Otherwise the next integer above |x| is at least 1/|d| away (|x| - m =
// (|v| - m|d|) / |d| with a nonzero integer numerator), so trunc(y) = floor(|x|) = trunc(|x|).
// IEEE multiplication is symmetric in sign, so multiplying v (not |v|) by +-r+ (the sign of d)
// gives -y or y, and the truncating conversion to int32 gives trunc(x) with its sign.
// - 8-bit types in float: k = 8, 11u 2^8 = 11 * 2^-16. d is clamped to +-256 (exact in float):
//   for |d| >= 256 every quotient of |v| <= 255 is 0 either way.
// - 32-bit types in double: k = 32, 11u 2^32 = 11 * 2^-21; every int divisor is exact in double.
// The quotient fits int32 before it is wrapped to T (modular in C++20): 8-bit quotients are within
// +-255, and with |d| >= 2 a 32-bit one is within (2^32 - 1) / 2 < 2^31 in magnitude.
// uint32 has no direct vector conversion to double before AVX-512, so it goes through int32:
// (double)(int32)(v ^ 2^31) + 2^31 == v, exactly. The unit tests check every 8-bit value against
// every divisor +-1..257 and random 32-bit values, exact multiples and their neighbours.

template <class T>
[[gnu::always_inline]] inline auto exactFloating(T v) {
  if constexpr (sizeof(T) == 1) {
    return static_cast<float>(v);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<double>(v);
  } else {
    return static_cast<double>(static_cast<int32_t>(v ^ 0x80000000u)) + 2147483648.0;
  }
}

// +-r+ of the proof above: fl(1/|d|) raised by 4 ulp, with the sign of d. |d| >= 2, exact in F.
template <class F>
F reciprocalRoundedUp(int divisor) {
  using Bits = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  const F magnitude = divisor < 0 ? -static_cast<F>(divisor) : static_cast<F>(divisor);
  const F up = std::bit_cast<F>(std::bit_cast<Bits>(F(1) / magnitude) + 4);  // positive, normal
  return divisor < 0 ? -up : up;
}

template <class T, class F>
WEFT_MULTIVERSION WEFT_VECTORIZE void divideByReciprocal(void* dst, const void* src, size_t count,
                                                         F reciprocal) {
  mapNative<T>(dst, src, count, [reciprocal](T v) {
    return static_cast<T>(static_cast<int32_t>(exactFloating(v) * reciprocal));
  });
}

template <class T>
WEFT_MULTIVERSION WEFT_VECTORIZE void negateInteger(void* dst, const void* src, size_t count) {
  using U = std::make_unsigned_t<T>;
  mapNative<T>(dst, src, count, [](T v) { return static_cast<T>(static_cast<U>(U(0) - U(v))); });
}

inline uint64_t mulHigh(uint64_t a, uint64_t b) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
}

inline int64_t mulHighSigned(int64_t a, int64_t b) {
  return static_cast<int64_t>((static_cast<__int128>(a) * b) >> 64);
}

// Granlund-Montgomery figure 4.1 (N = 64): for 1 <= d < 2^64 and every n < 2^64,
// n / d == (t + ((n - t) >> sh1)) >> sh2 with t = mulhi(m, n), l = ceil(log2 d),
// m = floor(2^64 (2^l - d) / d) + 1, sh1 = min(l, 1), sh2 = max(l - 1, 0).
void divideUnsigned64(uint64_t* out, const uint64_t* in, size_t count, uint64_t divisor,
                      bool negate) {
  const int l = divisor == 1 ? 0 : 64 - std::countl_zero(divisor - 1);
  const auto twoToL = static_cast<unsigned __int128>(1) << l;
  const auto m = static_cast<uint64_t>(((twoToL - divisor) << 64) / divisor + 1);
  const int sh1 = l < 1 ? l : 1;
  const int sh2 = l > 1 ? l - 1 : 0;
  const uint64_t sign = negate ? ~uint64_t(0) : 0;  // q ^ sign - sign negates when negate
  for (size_t i = 0; i < count; ++i) {
    const uint64_t n = in[i];
    const uint64_t t = mulHigh(m, n);
    const uint64_t q = (t + ((n - t) >> sh1)) >> sh2;
    out[i] = (q ^ sign) - sign;
  }
}

// Granlund-Montgomery figure 5.2 (N = 64), truncating signed division: for d != 0 and every n,
// l = max(ceil(log2 |d|), 1), m = 1 + floor(2^(63 + l) / |d|), m' = m - 2^64 (as int64),
// q0 = (n + mulsh(m', n)) >> (l - 1) (arithmetic) - (n < 0 ? -1 : 0), q = d < 0 ? -q0 : q0.
// The final negation is done modulo 2^64, so MIN / -1 would give MIN (that divisor never gets
// here: it is handled as a negation).
void divideSigned64(int64_t* out, const int64_t* in, size_t count, int64_t divisor) {
  const uint64_t magnitude = divisor < 0 ? uint64_t(0) - uint64_t(divisor) : uint64_t(divisor);
  const int ceilLog = magnitude == 1 ? 0 : 64 - std::countl_zero(magnitude - 1);
  const int l = ceilLog > 1 ? ceilLog : 1;
  const auto m = (static_cast<unsigned __int128>(1) << (63 + l)) / magnitude + 1;
  const auto mPrime = static_cast<int64_t>(static_cast<uint64_t>(m));  // m - 2^64, modular
  const int shPost = l - 1;
  const uint64_t sign = divisor < 0 ? ~uint64_t(0) : 0;
  for (size_t i = 0; i < count; ++i) {
    const int64_t n = in[i];
    const uint64_t sum = uint64_t(n) + uint64_t(mulHighSigned(mPrime, n));
    const uint64_t q0 = uint64_t(static_cast<int64_t>(sum) >> shPost) + (n < 0 ? 1 : 0);
    out[i] = static_cast<int64_t>((q0 ^ sign) - sign);
  }
}

template <class T>
void divideInteger(void* dst, const void* src, size_t count, int divisor) {
  if (divisor == 1) {
    if (dst != src) std::memcpy(dst, src, count * sizeof(T));
    return;
  }
  if (divisor == -1) return negateInteger<T>(dst, src, count);
  if constexpr (sizeof(T) == 1) {
    const int clamped = divisor > 256 ? 256 : divisor < -256 ? -256 : divisor;
    divideByReciprocal<T>(dst, src, count, reciprocalRoundedUp<float>(clamped));
  } else if constexpr (sizeof(T) == 4) {
    divideByReciprocal<T>(dst, src, count, reciprocalRoundedUp<double>(divisor));
  } else if constexpr (std::is_signed_v<T>) {
    divideSigned64(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count, divisor);
  } else {
    const uint64_t magnitude =
        divisor < 0 ? uint64_t(0) - static_cast<uint64_t>(divisor) : static_cast<uint64_t>(divisor);
    divideUnsigned64(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), count,
                     magnitude, divisor < 0);
  }
}

// --- half precision with F16C -----------------------------------------------------------------

#if WEFT_REDUCE_X86
// The newest instructions the half, bfloat16 and fp8 E5M2 kernels may use, from
// WEFT_REDUCE_HALF_ISA: avx512 (the default: AVX512-FP16 for half and E5M2, AVX512-BF16 for
// bfloat16, where the CPU has them), f16c (F16C for half; bfloat16's compiler-vectorised loop,
// E5M2's table), none (those loops and tables, half's too). The tests run the kernels each way;
// anything else counts as avx512.
enum class HalfIsa { None, F16c, Avx512 };

HalfIsa halfIsaAllowed() {
  static const HalfIsa allowed = [] {
    const char* v = std::getenv("WEFT_REDUCE_HALF_ISA");
    if (v && std::strcmp(v, "none") == 0) return HalfIsa::None;
    if (v && std::strcmp(v, "f16c") == 0) return HalfIsa::F16c;
    return HalfIsa::Avx512;
  }();
  return allowed;
}

bool halfExtensionsAllowed() {
  return halfIsaAllowed() != HalfIsa::None;
}
bool avx512HalfAllowed() {
  return halfIsaAllowed() == HalfIsa::Avx512;
}

// Checked once; the answer picks function pointers, not branches inside loops.
// (cpuid rather than __builtin_cpu_supports("f16c"), which clang does not know; "avx" includes
// the check that the OS saves the YMM registers.)
bool cpuHasF16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return halfExtensionsAllowed() && __builtin_cpu_supports("avx") &&
           __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return has;
}

// The vector form of combine<kKind, float>, with the same NaN and signed-zero results.
template <ReduceKind kKind>
__attribute__((target("avx,f16c"), always_inline)) inline __m256 combine8(__m256 a, __m256 b) {
  if constexpr (kKind == ReduceKind::Sum) return _mm256_add_ps(a, b);
  if constexpr (kKind == ReduceKind::Prod) return _mm256_mul_ps(a, b);
  // _mm256_max_ps(b, a) is "b > a ? b : a" (it returns its second operand when either is NaN or
  // both are zero); a NaN a must still give b.
  // (Selected with and/andnot/or: GCC 12 turned _mm256_blendv_ps on a compare's mask into a
  // branch per lane, 7x the time of the sum.)
  const __m256 aIsNan = _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
  const __m256 m = kKind == ReduceKind::Max ? _mm256_max_ps(b, a) : _mm256_min_ps(b, a);
  return _mm256_or_ps(_mm256_and_ps(aIsNan, b), _mm256_andnot_ps(aIsNan, m));
}

__attribute__((target("avx,f16c"), always_inline)) inline __m256 loadHalf8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Rounds to nearest even regardless of MXCSR, and quiets NaNs keeping the top of the payload,
// exactly as floatToHalf does.
__attribute__((target("avx,f16c"), always_inline)) inline void storeHalf8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

template <ReduceKind kKind>
__attribute__((target("avx,f16c"))) void reduceHalfF16c(void* dst, const void* a, const void* b,
                                                        size_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  // Both inputs are loaded before the store, so dst == a or dst == b is safe.
  for (; i + 8 <= count; i += 8) {
    storeHalf8(d + i, combine8<kKind>(loadHalf8(x + i), loadHalf8(y + i)));
  }
  reduceNarrow<HalfCodec, kKind>(d + i, x + i, y + i, count - i);
}

// Rounded to half after every operation, as the binary kernel's results are.
__attribute__((target("avx,f16c"), always_inline)) inline __m256 roundToHalf8(__m256 v) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

template <ReduceKind kKind, int kSources>
__attribute__((target("avx,f16c"))) void foldHalfF16c(void* dst, const void* const* srcs,
                                                      size_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto [x0, x1, x2, x3] = foldSources<uint16_t, kSources>(srcs);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 v = combine8<kKind>(loadHalf8(x0 + i), loadHalf8(x1 + i));
    if constexpr (kSources > 2) v = combine8<kKind>(roundToHalf8(v), loadHalf8(x2 + i));
    if constexpr (kSources > 3) v = combine8<kKind>(roundToHalf8(v), loadHalf8(x3 + i));
    storeHalf8(d + i, v);
  }
  const auto rest = foldTail<uint16_t, kSources>(srcs, i);
  foldNarrow<HalfCodec, kKind, kSources>(d + i, rest.data(), count - i);
}

// dst[i] = src[i] * v, or src[i] / v when kDivide.
template <bool kDivide>
__attribute__((target("avx,f16c"))) void mapHalfF16c(void* dst, const void* src, size_t count,
                                                     float v) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* s = static_cast<const uint16_t*>(src);
  const __m256 vv = _mm256_set1_ps(v);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = loadHalf8(s + i);
    storeHalf8(d + i, kDivide ? _mm256_div_ps(x, vv) : _mm256_mul_ps(x, vv));
  }
  mapNarrow<HalfCodec>(d + i, s + i, count - i, [v](float x) { return kDivide ? x / v : x * v; });
}

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*, which -Wmaybe-uninitialized
// mistakes for a read of an uninitialised variable once they are inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if WEFT_REDUCE_FP16
// --- half with AVX512-FP16 ----------------------------------------------------------------------
//
// Native half arithmetic, 32 elements a step. It gives the bits of the float path (compute in
// float, round to half once): a product of two halves is exact in float, and a float sum rounded
// again to half is the correctly rounded half sum, since float's 24 bits are at least 2 x 11 + 2
// (double rounding through such a format is innocuous for +, -, x and /). Max and min select.
// Subnormal halves are computed in full (MXCSR's DAZ and FTZ are clear); NaNs stay NaNs.

// CPUID.(EAX=7, ECX=0):EDX bit 23 (GCC 12's __builtin_cpu_supports("avx512fp16") says no on
// the build machine, whose CPU has it); "avx512bw" includes the OS's check for the ZMM state.
bool cpuHasAvx512Fp16() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return avx512HalfAllowed() && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") &&
           __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 23)) != 0;
  }();
  return has;
}

#define WEFT_FP16_TARGET __attribute__((target("avx512fp16,avx512bw,avx512vl"), always_inline))

template <ReduceKind kKind>
WEFT_FP16_TARGET inline __m512h combine32(__m512h a, __m512h b) {
  if constexpr (kKind == ReduceKind::Sum) return _mm512_add_ph(a, b);
  if constexpr (kKind == ReduceKind::Prod) return _mm512_mul_ph(a, b);
  // _mm512_max_ph(b, a) is "b > a ? b : a"; a NaN a must still give b.
  const __mmask32 aIsNan = _mm512_cmp_ph_mask(a, a, _CMP_UNORD_Q);
  const __m512h m = kKind == ReduceKind::Max ? _mm512_max_ph(b, a) : _mm512_min_ph(b, a);
  const __m512h r = _mm512_mask_blend_ph(aIsNan, m, b);
  // A selected NaN comes out quiet, as from the float path (whose conversion back quiets it).
  const __mmask32 rIsNan = _mm512_cmp_ph_mask(r, r, _CMP_UNORD_Q);
  const __m512i bits = _mm512_castph_si512(r);
  return _mm512_castsi512_ph(
      _mm512_mask_blend_epi16(rIsNan, bits, _mm512_or_si512(bits, _mm512_set1_epi16(0x0200))));
}

WEFT_FP16_TARGET inline __m512h loadHalf32(const uint16_t* p) {
  return _mm512_castsi512_ph(_mm512_loadu_si512(p));
}

WEFT_FP16_TARGET inline void storeHalf32(uint16_t* p, __m512h v) {
  _mm512_storeu_si512(p, _mm512_castph_si512(v));
}

template <ReduceKind kKind>
__attribute__((target("avx512fp16,avx512bw,avx512vl"))) void reduceHalfAvx512(void* dst,
                                                                              const void* a,
                                                                              const void* b,
                                                                              size_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  // Both inputs are loaded before the store, so dst == a or dst == b is safe.
  for (; i + 32 <= count; i += 32)
    storeHalf32(d + i, combine32<kKind>(loadHalf32(x + i), loadHalf32(y + i)));
  reduceHalfF16c<kKind>(d + i, x + i, y + i, count - i);
}

template <ReduceKind kKind, int kSources>
__attribute__((target("avx512fp16,avx512bw,avx512vl"))) void foldHalfAvx512(void* dst,
                                                                            const void* const* srcs,
                                                                            size_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto [x0, x1, x2, x3] = foldSources<uint16_t, kSources>(srcs);
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m512h v = combine32<kKind>(loadHalf32(x0 + i), loadHalf32(x1 + i));
    if constexpr (kSources > 2) v = combine32<kKind>(v, loadHalf32(x2 + i));
    if constexpr (kSources > 3) v = combine32<kKind>(v, loadHalf32(x3 + i));
    storeHalf32(d + i, v);
  }
  const auto rest = foldTail<uint16_t, kSources>(srcs, i);
  foldHalfF16c<kKind, kSources>(d + i, rest.data(), count - i);
}

// dst[i] = src[i] * v (v a half value: the product is exact in float, so one rounding either way).
__attribute__((target("avx512fp16,avx512bw,avx512vl"))) void scaleHalfAvx512(void* dst,
                                                                             const void* src,
                                                                             size_t count,
                                                                             uint16_t v) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* s = static_cast<const uint16_t*>(src);
  const __m512h vv = _mm512_castsi512_ph(_mm512_set1_epi16(static_cast<short>(v)));
  size_t i = 0;
  for (; i + 32 <= count; i += 32) storeHalf32(d + i, _mm512_mul_ph(loadHalf32(s + i), vv));
  mapHalfF16c<false>(d + i, s + i, count - i, HalfCodec::decode(v));
}

// fp8 E5M2 is the top byte of a half, so it computes in half too: 32 elements a step, where the
// table lookup of reduceFp8 does about one per cycle. Rounding the half result to E5M2 gives
// what rounding the float result does, for the same reason as above (11 >= 2 x 3 + 2 bits; a
// half sum that overflows saturates as the float one does). The tests compare every input pair
// of every op with the scalar conversions.

WEFT_FP16_TARGET inline __m512h e5m2ToHalf32(__m256i codes) {
  return _mm512_castsi512_ph(_mm512_slli_epi16(_mm512_cvtepu8_epi16(codes), 8));
}

WEFT_FP16_TARGET inline __m512h loadE5m2x32(const uint8_t* p) {
  return e5m2ToHalf32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// As floatToFp8e5m2: to nearest even, finite overflow and infinity saturate to +-57344 (0x7b),
// NaN is the canonical 0x7f.
WEFT_FP16_TARGET inline __m256i encodeE5m2x32(__m512h v) {
  const __m512i h = _mm512_castph_si512(v);
  const __m512i abs = _mm512_and_si512(h, _mm512_set1_epi16(0x7fff));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(abs, 8), _mm512_set1_epi16(1));
  const __m512i rounded =
      _mm512_srli_epi16(_mm512_add_epi16(_mm512_add_epi16(abs, _mm512_set1_epi16(0x7f)), lsb), 8);
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi16(h, 8), _mm512_set1_epi16(0x80));
  const __m512i code = _mm512_or_si512(_mm512_min_epu16(rounded, _mm512_set1_epi16(0x7b)), sign);
  const __mmask32 nan = _mm512_cmpgt_epu16_mask(abs, _mm512_set1_epi16(0x7c00));
  return _mm512_cvtepi16_epi8(_mm512_mask_blend_epi16(nan, code, _mm512_set1_epi16(0x7f)));
}

template <ReduceKind kKind>
__attribute__((target("avx512fp16,avx512bw,avx512vl"))) void reduceE5m2Avx512(void* dst,
                                                                              const void* a,
                                                                              const void* b,
                                                                              size_t count) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i r = encodeE5m2x32(combine32<kKind>(loadE5m2x32(x + i), loadE5m2x32(y + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), r);
  }
  reduceFp8<Fp8e5m2Codec, kKind>(d + i, x + i, y + i, count - i);
}

template <ReduceKind kKind, int kSources>
__attribute__((target("avx512fp16,avx512bw,avx512vl"))) void foldE5m2Avx512(void* dst,
                                                                            const void* const* srcs,
                                                                            size_t count) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto [x0, x1, x2, x3] = foldSources<uint8_t, kSources>(srcs);
  // Rounded to E5M2 after every operation, as the binary kernel's results are.
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m512h v = combine32<kKind>(loadE5m2x32(x0 + i), loadE5m2x32(x1 + i));
    if constexpr (kSources > 2)
      v = combine32<kKind>(e5m2ToHalf32(encodeE5m2x32(v)), loadE5m2x32(x2 + i));
    if constexpr (kSources > 3)
      v = combine32<kKind>(e5m2ToHalf32(encodeE5m2x32(v)), loadE5m2x32(x3 + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), encodeE5m2x32(v));
  }
  const auto rest = foldTail<uint8_t, kSources>(srcs, i);
  foldFp8<Fp8e5m2Codec, kKind, kSources>(d + i, rest.data(), count - i);
}
#undef WEFT_FP16_TARGET
#endif  // WEFT_REDUCE_FP16

// --- bfloat16 with AVX512-BF16 ----------------------------------------------------------------
//
// VCVTNEPS2BF16 rounds to nearest even and quiets NaNs exactly as Bfloat16Codec::encode, but
// flushes float subnormals to zero, where encode rounds them to bfloat16 subnormals: subnormal
// lanes are redone with encode's integer arithmetic (rare: the sum of two bfloat16 numbers is a
// float subnormal only when it is below 2^-126). 16 elements a step,
// where GCC's own vectorisation of reduceBfloat16 does 16 in about 50 instructions.

bool cpuHasAvx512Bf16() {
  static const bool has = avx512HalfAllowed() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bf16");
  return has;
}

#define WEFT_BF16_TARGET __attribute__((target("avx512f,avx512dq,avx512bf16"), always_inline))

// The vector form of combine<kKind, float>, with the same NaN and signed-zero results.
template <ReduceKind kKind>
WEFT_BF16_TARGET inline __m512 combine16(__m512 a, __m512 b) {
  if constexpr (kKind == ReduceKind::Sum) return _mm512_add_ps(a, b);
  if constexpr (kKind == ReduceKind::Prod) return _mm512_mul_ps(a, b);
  // _mm512_max_ps(b, a) is "b > a ? b : a"; a NaN a must still give b.
  const __mmask16 aIsNan = _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
  if constexpr (kKind == ReduceKind::Max)
    return _mm512_mask_blend_ps(aIsNan, _mm512_max_ps(b, a), b);
  if constexpr (kKind == ReduceKind::Min)
    return _mm512_mask_blend_ps(aIsNan, _mm512_min_ps(b, a), b);
}

WEFT_BF16_TARGET inline __m512 loadBf16x16(const uint16_t* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

// 16 floats rounded to bfloat16 as Bfloat16Codec::encode does, in the 16-bit lanes of the result.
WEFT_BF16_TARGET inline __m256i encodeBf16x16(__m512 v) {
  const __m256i converted = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
  const __m512i bits = _mm512_castps_si512(v);
  // Subnormal (VFPCLASSPS, class bit 5): not zero, whose sign the instruction keeps as encode
  // does (zeros are common, and would take the slow lane every time).
  const __mmask16 tiny = _mm512_fpclass_ps_mask(v, 0x20);
  if (tiny == 0) return converted;
  // (bits + 0x7fff + lsb) >> 16, as encode (no NaN has a zero exponent).
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i merged = _mm512_mask_blend_epi32(tiny, _mm512_cvtepu16_epi32(converted), rounded);
  return _mm512_cvtepi32_epi16(merged);
}

// v rounded to bfloat16 and back: the value a binary kernel would have stored.
WEFT_BF16_TARGET inline __m512 roundBf16x16(__m512 v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(encodeBf16x16(v)), 16));
}

template <ReduceKind kKind>
__attribute__((target("avx512f,avx512dq,avx512bf16"))) void reduceBfloat16Avx512(void* dst,
                                                                                 const void* a,
                                                                                 const void* b,
                                                                                 size_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  // Both inputs are loaded before the store, so dst == a or dst == b is safe.
  for (; i + 16 <= count; i += 16) {
    const __m256i r = encodeBf16x16(combine16<kKind>(loadBf16x16(x + i), loadBf16x16(y + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), r);
  }
  reduceBfloat16<kKind>(d + i, x + i, y + i, count - i);
}

template <ReduceKind kKind, int kSources>
__attribute__((target("avx512f,avx512dq,avx512bf16"))) void foldBfloat16Avx512(
    void* dst, const void* const* srcs, size_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto [x0, x1, x2, x3] = foldSources<uint16_t, kSources>(srcs);
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m512 v = combine16<kKind>(loadBf16x16(x0 + i), loadBf16x16(x1 + i));
    if constexpr (kSources > 2) v = combine16<kKind>(roundBf16x16(v), loadBf16x16(x2 + i));
    if constexpr (kSources > 3) v = combine16<kKind>(roundBf16x16(v), loadBf16x16(x3 + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), encodeBf16x16(v));
  }
  const auto rest = foldTail<uint16_t, kSources>(srcs, i);
  foldBfloat16<kKind, kSources>(d + i, rest.data(), count - i);
}
// dst[i] = src[i] * v, or src[i] / v when kDivide (in float, rounded once).
template <bool kDivide>
__attribute__((target("avx512f,avx512dq,avx512bf16"))) void mapBfloat16Avx512(void* dst,
                                                                              const void* src,
                                                                              size_t count,
                                                                              float v) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* s = static_cast<const uint16_t*>(src);
  const __m512 vv = _mm512_set1_ps(v);
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512 x = loadBf16x16(s + i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        encodeBf16x16(kDivide ? _mm512_div_ps(x, vv) : _mm512_mul_ps(x, vv)));
  }
  mapNarrow<Bfloat16Codec>(d + i, s + i, count - i,
                           [v](float x) { return kDivide ? x / v : x * v; });
}
#undef WEFT_BF16_TARGET
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

// --- dispatch ------------------------------------------------------------------------------------

template <ReduceKind kKind>
ReduceFn kernelFor(weftDataType_t datatype) {
  switch (datatype) {
    case weftInt8: return reduceNative<int8_t, kKind>;
    case weftUint8: return reduceNative<uint8_t, kKind>;
    case weftInt32: return reduceNative<int32_t, kKind>;
    case weftUint32: return reduceNative<uint32_t, kKind>;
    case weftInt64: return reduceNative<int64_t, kKind>;
    case weftUint64: return reduceNative<uint64_t, kKind>;
    case weftFloat32: return reduceNative<float, kKind>;
    case weftFloat64: return reduceNative<double, kKind>;
    case weftFloat16:
#if WEFT_REDUCE_X86
#if WEFT_REDUCE_FP16
      if (cpuHasAvx512Fp16()) return reduceHalfAvx512<kKind>;
#endif
      if (cpuHasF16c()) return reduceHalfF16c<kKind>;
#endif
      return reduceNarrow<HalfCodec, kKind>;
    case weftBfloat16:
#if WEFT_REDUCE_X86
      if (cpuHasAvx512Bf16()) return reduceBfloat16Avx512<kKind>;
#endif
      return reduceBfloat16<kKind>;
    case weftFloat8e4m3: return reduceFp8<Fp8e4m3Codec, kKind>;
    case weftFloat8e5m2:
#if WEFT_REDUCE_FP16
      if (cpuHasAvx512Fp16()) return reduceE5m2Avx512<kKind>;
#endif
      return reduceFp8<Fp8e5m2Codec, kKind>;
    default: return nullptr;
  }
}

// d rounded to float "to odd": toward zero, then the last bit set if that was inexact. Rounding
// the result to nearest even in a format of at most 22 significant bits gives d correctly
// rounded to that format, which going through float by nearest would not always do (1/8283 in
// half: the float lands exactly on a half midpoint and the tie breaks the wrong way).
float toFloatRoundToOdd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || !std::isfinite(d)) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

template <class T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store(void* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

template <class Codec>
float decodeScalar(const void* scalar) {
  return Codec::decode(load<typename Codec::Storage>(scalar));
}

}  // namespace

ReduceFn reduceKernel(weftDataType_t datatype, ReduceKind kind) noexcept {
  switch (kind) {
    case ReduceKind::Sum: return kernelFor<ReduceKind::Sum>(datatype);
    case ReduceKind::Prod: return kernelFor<ReduceKind::Prod>(datatype);
    case ReduceKind::Max: return kernelFor<ReduceKind::Max>(datatype);
    case ReduceKind::Min: return kernelFor<ReduceKind::Min>(datatype);
  }
  return nullptr;
}

namespace {

using FoldFn = void (*)(void* dst, const void* const* srcs, size_t count);

// The folds of one datatype and op, by source count (index 2 to 4).
struct Folds {
  FoldFn byCount[5];
  size_t elemSize;
};

template <template <int> class F>
constexpr Folds foldsOf(size_t elemSize) {
  return Folds{{nullptr, nullptr, F<2>::fn, F<3>::fn, F<4>::fn}, elemSize};
}

template <class T, ReduceKind kKind>
struct NativeFold {
  template <int k>
  struct F {
    static constexpr FoldFn fn = foldNative<T, kKind, k>;
  };
};
template <ReduceKind kKind>
struct Bfloat16Fold {
  template <int k>
  struct F {
    static constexpr FoldFn fn = foldBfloat16<kKind, k>;
  };
};
template <class Codec, ReduceKind kKind>
struct NarrowFold {
  template <int k>
  struct F {
    static constexpr FoldFn fn = foldNarrow<Codec, kKind, k>;
  };
};
template <class Codec, ReduceKind kKind>
struct Fp8Fold {
  template <int k>
  struct F {
    static constexpr FoldFn fn = foldFp8<Codec, kKind, k>;
  };
};
#if WEFT_REDUCE_X86
template <ReduceKind kKind>
struct HalfF16cFold {
  template <int k>
  struct F {
    static constexpr FoldFn fn = foldHalfF16c<kKind, k>;
  };
};
#if WEFT_REDUCE_FP16
template <ReduceKind kKind>
struct HalfAvx512Fold {
  template <int k>
  struct F {
    static constexpr FoldFn fn = foldHalfAvx512<kKind, k>;
  };
};
template <ReduceKind kKind>
struct E5m2Avx512Fold {
  template <int k>
  struct F {
    static constexpr FoldFn fn = foldE5m2Avx512<kKind, k>;
  };
};
#endif
template <ReduceKind kKind>
struct Bfloat16Avx512Fold {
  template <int k>
  struct F {
    static constexpr FoldFn fn = foldBfloat16Avx512<kKind, k>;
  };
};
#endif

// Sources after the first four are folded in tiles this large, so that dst stays in the L1
// cache between its passes.
constexpr size_t kFoldTileBytes = 8 << 10;

template <const Folds& kFolds>
void reduceMany(void* dst, const void* const* srcs, int nsrcs, size_t count) {
  const size_t es = kFolds.elemSize;
  if (nsrcs <= 1) {
    if (nsrcs == 1 && dst != srcs[0]) std::memcpy(dst, srcs[0], count * es);
    return;
  }
  const size_t tile = nsrcs <= 4 ? count : std::max<size_t>(1, kFoldTileBytes / es);
  // dst may be a source past the first pass's four, which that pass overwrites before a later
  // one reads it: each tile of it is copied aside first (tiles are kFoldTileBytes there).
  int late = -1;
  for (int k = 4; k < nsrcs; ++k)
    if (srcs[k] == dst) late = k;
  alignas(64) uint8_t aside[kFoldTileBytes];
  for (size_t at = 0; at < count; at += tile) {
    const size_t len = std::min(tile, count - at);
    auto* d = static_cast<uint8_t*>(dst) + at * es;
    auto source = [&](int k) -> const void* {
      return k == late ? aside : static_cast<const uint8_t*>(srcs[k]) + at * es;
    };
    if (late >= 0) std::memcpy(aside, d, len * es);
    // The first pass folds up to four sources into dst; each next one dst and up to three more.
    const void* group[4];
    int done = std::min(nsrcs, 4);
    for (int k = 0; k < done; ++k) group[k] = source(k);
    kFolds.byCount[done](d, group, len);
    while (done < nsrcs) {
      const int more = std::min(nsrcs - done, 3);
      group[0] = d;
      for (int k = 0; k < more; ++k) group[1 + k] = source(done + k);
      kFolds.byCount[1 + more](d, group, len);
      done += more;
    }
  }
}

template <class T, ReduceKind kKind>
inline constexpr Folds kNativeFolds = foldsOf<NativeFold<T, kKind>::template F>(sizeof(T));
template <ReduceKind kKind>
inline constexpr Folds kBfloat16Folds = foldsOf<Bfloat16Fold<kKind>::template F>(2);
template <ReduceKind kKind>
inline constexpr Folds kHalfFolds = foldsOf<NarrowFold<HalfCodec, kKind>::template F>(2);
#if WEFT_REDUCE_X86
template <ReduceKind kKind>
inline constexpr Folds kHalfF16cFolds = foldsOf<HalfF16cFold<kKind>::template F>(2);
#if WEFT_REDUCE_FP16
template <ReduceKind kKind>
inline constexpr Folds kHalfAvx512Folds = foldsOf<HalfAvx512Fold<kKind>::template F>(2);
template <ReduceKind kKind>
inline constexpr Folds kE5m2Avx512Folds = foldsOf<E5m2Avx512Fold<kKind>::template F>(1);
#endif
template <ReduceKind kKind>
inline constexpr Folds kBfloat16Avx512Folds = foldsOf<Bfloat16Avx512Fold<kKind>::template F>(2);
#endif
template <class Codec, ReduceKind kKind>
inline constexpr Folds kFp8Folds = foldsOf<Fp8Fold<Codec, kKind>::template F>(1);

template <ReduceKind kKind>
ReduceManyFn manyKernelFor(weftDataType_t datatype) {
  switch (datatype) {
    case weftInt8: return reduceMany<kNativeFolds<int8_t, kKind>>;
    case weftUint8: return reduceMany<kNativeFolds<uint8_t, kKind>>;
    case weftInt32: return reduceMany<kNativeFolds<int32_t, kKind>>;
    case weftUint32: return reduceMany<kNativeFolds<uint32_t, kKind>>;
    case weftInt64: return reduceMany<kNativeFolds<int64_t, kKind>>;
    case weftUint64: return reduceMany<kNativeFolds<uint64_t, kKind>>;
    case weftFloat32: return reduceMany<kNativeFolds<float, kKind>>;
    case weftFloat64: return reduceMany<kNativeFolds<double, kKind>>;
    case weftFloat16:
#if WEFT_REDUCE_X86
#if WEFT_REDUCE_FP16
      if (cpuHasAvx512Fp16()) return reduceMany<kHalfAvx512Folds<kKind>>;
#endif
      if (cpuHasF16c()) return reduceMany<kHalfF16cFolds<kKind>>;
#endif
      return reduceMany<kHalfFolds<kKind>>;
    case weftBfloat16:
#if WEFT_REDUCE_X86
      if (cpuHasAvx512Bf16()) return reduceMany<kBfloat16Avx512Folds<kKind>>;
#endif
      return reduceMany<kBfloat16Folds<kKind>>;
    case weftFloat8e4m3: return reduceMany<kFp8Folds<Fp8e4m3Codec, kKind>>;
    case weftFloat8e5m2:
#if WEFT_REDUCE_FP16
      if (cpuHasAvx512Fp16()) return reduceMany<kE5m2Avx512Folds<kKind>>;
#endif
      return reduceMany<kFp8Folds<Fp8e5m2Codec, kKind>>;
    default: return nullptr;
  }
}

}  // namespace

ReduceManyFn reduceManyKernel(weftDataType_t datatype, ReduceKind kind) noexcept {
  switch (kind) {
    case ReduceKind::Sum: return manyKernelFor<ReduceKind::Sum>(datatype);
    case ReduceKind::Prod: return manyKernelFor<ReduceKind::Prod>(datatype);
    case ReduceKind::Max: return manyKernelFor<ReduceKind::Max>(datatype);
    case ReduceKind::Min: return manyKernelFor<ReduceKind::Min>(datatype);
  }
  return nullptr;
}

const char* reduceKernelIsa(weftDataType_t datatype) noexcept {
  // Read off the kernel the selection returns (its sum), so that this cannot drift from it.
  [[maybe_unused]] const ReduceFn kernel = kernelFor<ReduceKind::Sum>(datatype);
#if WEFT_REDUCE_FP16
  if (kernel == reduceHalfAvx512<ReduceKind::Sum> || kernel == reduceE5m2Avx512<ReduceKind::Sum>)
    return "avx512-fp16";
#endif
#if WEFT_REDUCE_X86
  if (kernel == reduceHalfF16c<ReduceKind::Sum>) return "f16c";
  if (kernel == reduceBfloat16Avx512<ReduceKind::Sum>) return "avx512-bf16";
#endif
  return "generic";
}

void scale(void* dst, const void* src, size_t count, weftDataType_t datatype,
           const void* scalar) noexcept {
  const auto times = [](float s) { return [s](float v) { return v * s; }; };
  switch (datatype) {
    case weftInt8: return scaleNative<int8_t>(dst, src, count, load<int8_t>(scalar));
    case weftUint8: return scaleNative<uint8_t>(dst, src, count, load<uint8_t>(scalar));
    case weftInt32: return scaleNative<int32_t>(dst, src, count, load<int32_t>(scalar));
    case weftUint32: return scaleNative<uint32_t>(dst, src, count, load<uint32_t>(scalar));
    case weftInt64: return scaleNative<int64_t>(dst, src, count, load<int64_t>(scalar));
    case weftUint64: return scaleNative<uint64_t>(dst, src, count, load<uint64_t>(scalar));
    case weftFloat32: return scaleNative<float>(dst, src, count, load<float>(scalar));
    case weftFloat64: return scaleNative<double>(dst, src, count, load<double>(scalar));
    case weftFloat16: {
      const float s = decodeScalar<HalfCodec>(scalar);
#if WEFT_REDUCE_X86
#if WEFT_REDUCE_FP16
      if (cpuHasAvx512Fp16()) return scaleHalfAvx512(dst, src, count, load<uint16_t>(scalar));
#endif
      if (cpuHasF16c()) return mapHalfF16c<false>(dst, src, count, s);
#endif
      return mapNarrow<HalfCodec>(dst, src, count, times(s));
    }
    case weftBfloat16: {
      const float s = decodeScalar<Bfloat16Codec>(scalar);
#if WEFT_REDUCE_X86
      if (cpuHasAvx512Bf16()) return mapBfloat16Avx512<false>(dst, src, count, s);
#endif
      return mapNarrow<Bfloat16Codec>(dst, src, count, times(s));
    }
    case weftFloat8e4m3:
      return mapNarrow<Fp8e4m3Codec>(dst, src, count, times(decodeScalar<Fp8e4m3Codec>(scalar)));
    case weftFloat8e5m2:
      return mapNarrow<Fp8e5m2Codec>(dst, src, count, times(decodeScalar<Fp8e5m2Codec>(scalar)));
    default: return;
  }
}

void divide(void* dst, const void* src, size_t count, weftDataType_t datatype,
            int divisor) noexcept {
  const float f = static_cast<float>(divisor);
  const auto over = [f](float v) { return v / f; };
  switch (datatype) {
    case weftInt8: return divideInteger<int8_t>(dst, src, count, divisor);
    case weftUint8: return divideInteger<uint8_t>(dst, src, count, divisor);
    case weftInt32: return divideInteger<int32_t>(dst, src, count, divisor);
    case weftUint32: return divideInteger<uint32_t>(dst, src, count, divisor);
    case weftInt64: return divideInteger<int64_t>(dst, src, count, divisor);
    case weftUint64: return divideInteger<uint64_t>(dst, src, count, divisor);
    case weftFloat32: return divideFloating<float>(dst, src, count, f);
    case weftFloat64: return divideFloating<double>(dst, src, count, divisor);
    case weftFloat16:
#if WEFT_REDUCE_X86
      if (cpuHasF16c()) return mapHalfF16c<true>(dst, src, count, f);
#endif
      return mapNarrow<HalfCodec>(dst, src, count, over);
    case weftBfloat16:
#if WEFT_REDUCE_X86
      if (cpuHasAvx512Bf16()) return mapBfloat16Avx512<true>(dst, src, count, f);
#endif
      return mapNarrow<Bfloat16Codec>(dst, src, count, over);
    case weftFloat8e4m3: return mapNarrow<Fp8e4m3Codec>(dst, src, count, over);
    case weftFloat8e5m2: return mapNarrow<Fp8e5m2Codec>(dst, src, count, over);
    default: return;
  }
}

void reciprocal(void* out, weftDataType_t datatype, int n) noexcept {
  const double exact = 1.0 / static_cast<double>(n);  // correctly rounded to double
  const float odd = toFloatRoundToOdd(exact);
  switch (datatype) {
    case weftFloat32: return store(out, static_cast<float>(exact));
    case weftFloat64: return store(out, exact);
    case weftFloat16: return store(out, HalfCodec::encode(odd));
    case weftBfloat16: return store(out, Bfloat16Codec::encode(odd));
    case weftFloat8e4m3: return store(out, Fp8e4m3Codec::encode(odd));
    case weftFloat8e5m2: return store(out, Fp8e5m2Codec::encode(odd));
    default:
      // Integers have no 1/n; their Avg is Sum followed by divide(). Writing zero (rather than
      // leaving the memory alone) makes a caller that uses it anyway get an obviously wrong 0.
      if (isValidDatatype(datatype)) std::memset(out, 0, datatypeSize(datatype));
      return;
  }
}

}  // namespace weft
