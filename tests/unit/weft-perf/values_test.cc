#include "tools/weft-perf/values.hpp"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "tools/weft-perf/formats.hpp"

using namespace weft::perf;

namespace {

const weftDataType_t kFloating[] = {weftFloat16,  weftFloat32,    weftFloat64,
                                    weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};
const int kRankCounts[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 100, 257, 1000};

// One rounding to the type: what every step of a reduction in that type does.
double roundTo(weftDataType_t type, double v) {
  return decodeFloating(type, encodeFloating(type, v));
}

// The orders a reduction might combine n inputs in: as permutations, plus a pairwise tree.
std::vector<std::vector<int>> orders(int n, std::mt19937& rng) {
  std::vector<int> forward(n);
  std::iota(forward.begin(), forward.end(), 0);
  std::vector<std::vector<int>> out{forward, {forward.rbegin(), forward.rend()}};
  for (int k = 0; k < 3; ++k) {
    out.push_back(forward);
    std::shuffle(out.back().begin(), out.back().end(), rng);
  }
  return out;
}

template <class Combine>
double reduceInOrder(const std::vector<double>& terms, const std::vector<int>& order,
                     weftDataType_t type, Combine combine) {
  double acc = terms[order[0]];
  for (size_t k = 1; k < order.size(); ++k) acc = roundTo(type, combine(acc, terms[order[k]]));
  return acc;
}

template <class Combine>
double reducePairwise(std::vector<double> terms, weftDataType_t type, Combine combine) {
  while (terms.size() > 1) {
    std::vector<double> next;
    for (size_t k = 0; k + 1 < terms.size(); k += 2)
      next.push_back(roundTo(type, combine(terms[k], terms[k + 1])));
    if (terms.size() % 2 == 1) next.push_back(terms.back());
    terms = std::move(next);
  }
  return terms[0];
}

}  // namespace

TEST_CASE("floating sum, premulsum, prod, max and min are exact in any order and tree") {
  std::mt19937 rng(7);
  for (const weftDataType_t type : kFloating) {
    for (const ReduceOp op :
         {ReduceOp::Sum, ReduceOp::PreMulSum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min}) {
      for (const int n : kRankCounts) {
        const ValueSpec spec{type, op, n, 0x1234};
        const auto combine = [op](double a, double b) {
          switch (op) {
            case ReduceOp::Prod: return a * b;
            case ReduceOp::Max: return std::max(a, b);
            case ReduceOp::Min: return std::min(a, b);
            default: return a + b;
          }
        };
        for (uint64_t i = 0; i < 40; ++i) {
          INFO("type " << type << " op " << reduceOpName(op) << " n " << n << " index " << i);
          std::vector<double> terms;
          double magnitude = 0;
          for (int r = 0; r < n; ++r) {
            const double x = floatingInput(spec, r, i);
            REQUIRE(x == std::trunc(x));                                // an integer
            REQUIRE(decodeFloating(type, inputBits(spec, r, i)) == x);  // encoded exactly
            magnitude += std::fabs(x);
            terms.push_back(op == ReduceOp::PreMulSum ? roundTo(type, kPreMulScalar * x) : x);
          }
          if (op == ReduceOp::Sum) CHECK(magnitude <= double(exactIntegerLimit(type)));
          if (op == ReduceOp::PreMulSum) CHECK(2 * magnitude <= double(exactIntegerLimit(type)));
          const Expected e = expectedReduction(spec, i);
          for (const std::vector<int>& order : orders(n, rng)) {
            const double got = reduceInOrder(terms, order, type, combine);
            CHECK(got == e.value);
            CHECK(resultMatches(spec, e, encodeFloating(type, got)));
          }
          CHECK(reducePairwise(terms, type, combine) == e.value);
        }
      }
    }
  }
}

TEST_CASE("floating avg (inputs times a rounded 1/n, then summed) stays within the tolerance") {
  std::mt19937 rng(11);
  for (const weftDataType_t type : kFloating) {
    for (const int n : kRankCounts) {
      const ValueSpec spec{type, ReduceOp::Avg, n, 0x99};
      const double rcp = roundTo(type, 1.0 / n);
      for (uint64_t i = 0; i < 40; ++i) {
        INFO("type " << type << " n " << n << " index " << i);
        std::vector<double> terms;
        double sum = 0, magnitude = 0;
        for (int r = 0; r < n; ++r) {
          const double x = floatingInput(spec, r, i);
          sum += x;
          magnitude += std::fabs(x);
          terms.push_back(roundTo(type, x * rcp));
        }
        const Expected e = expectedReduction(spec, i);
        CHECK(e.value == sum / n);
        const auto add = [](double a, double b) { return a + b; };
        for (const std::vector<int>& order : orders(n, rng)) {
          const double got = reduceInOrder(terms, order, type, add);
          CHECK(std::fabs(got - e.value) <= e.tolerance);
          CHECK(resultMatches(spec, e, encodeFloating(type, got)));
        }
        CHECK(std::fabs(reducePairwise(terms, type, add) - e.value) <= e.tolerance);
        // Tight enough to catch a wrong answer: relative to the mean magnitude, 1e-4 where the
        // type has bits to spare (at 1000 ranks), and never as much as the mean magnitude.
        const double mean = magnitude / n;
        if (type == weftFloat32 || type == weftFloat64) CHECK(e.tolerance <= 1e-4 * (1 + mean));
        if (n <= 8) CHECK(e.tolerance < 1 + mean);
        // A NaN or a value off by more than the tolerance is wrong.
        CHECK_FALSE(resultMatches(spec, e, encodeFloating(type, NAN)));
        CHECK_FALSE(resultMatches(spec, e, encodeFloating(type, e.value + 4 * e.tolerance + 1)));
      }
    }
  }
}

namespace {

// The reference for integers: the reduction in T's own arithmetic (wrapping through the
// unsigned type of the same width), an independent computation from values.cc's uint64 masks.
template <class T>
void checkIntegerType(weftDataType_t type) {
  using U = std::make_unsigned_t<T>;
  const auto wrap = [](uint64_t v) { return static_cast<T>(static_cast<U>(v)); };
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min,
                            ReduceOp::Avg, ReduceOp::PreMulSum}) {
    for (const int n : {1, 2, 3, 5, 8, 13}) {
      const ValueSpec spec{type, op, n, 0xabc};
      for (uint64_t i = 0; i < 200; ++i) {
        std::vector<T> x;
        for (int r = 0; r < n; ++r) {
          const uint64_t bits = inputBits(spec, r, i);
          REQUIRE(bits <= typeMask(sizeof(T)));
          x.push_back(wrap(bits));
        }
        T ref = x[0];
        if (op == ReduceOp::PreMulSum) ref = wrap(uint64_t(U(ref)) * 2);
        for (int r = 1; r < n; ++r) {
          switch (op) {
            case ReduceOp::Sum:
            case ReduceOp::Avg: ref = wrap(uint64_t(U(ref)) + U(x[r])); break;
            case ReduceOp::PreMulSum: ref = wrap(uint64_t(U(ref)) + uint64_t(U(x[r])) * 2); break;
            case ReduceOp::Prod: ref = wrap(uint64_t(U(ref)) * uint64_t(U(x[r]))); break;
            case ReduceOp::Max: ref = std::max(ref, x[r]); break;
            case ReduceOp::Min: ref = std::min(ref, x[r]); break;
          }
        }
        if (op == ReduceOp::Avg) {
          if constexpr (std::is_signed_v<T>)
            ref = static_cast<T>(static_cast<int64_t>(ref) / n);  // C++ truncates toward zero
          else
            ref = static_cast<T>(static_cast<uint64_t>(ref) / static_cast<uint64_t>(n));
        }
        INFO("op " << reduceOpName(op) << " n " << n << " index " << i);
        const Expected e = expectedReduction(spec, i);
        CHECK(e.bits == uint64_t(U(ref)));
        CHECK(resultMatches(spec, e, uint64_t(U(ref))));
        CHECK_FALSE(resultMatches(spec, e, uint64_t(U(ref + 1))));
      }
    }
  }
}

}  // namespace

TEST_CASE("integer expectations wrap in the type's own width, avg truncates toward zero") {
  checkIntegerType<int8_t>(weftInt8);
  checkIntegerType<uint8_t>(weftUint8);
  checkIntegerType<int32_t>(weftInt32);
  checkIntegerType<uint32_t>(weftUint32);
  checkIntegerType<int64_t>(weftInt64);
  checkIntegerType<uint64_t>(weftUint64);
}

TEST_CASE("data-movement inputs are arbitrary bit patterns, deterministic per rank and index") {
  for (const DatatypeInfo& d : kDatatypes) {
    const ValueSpec spec{d.type, std::nullopt, 4, 77};
    int differ = 0, saltDiffers = 0;
    for (uint64_t i = 0; i < 256; ++i) {
      CHECK(inputBits(spec, 1, i) <= typeMask(d.size));
      CHECK(inputBits(spec, 1, i) == inputBits(spec, 1, i));
      differ += inputBits(spec, 0, i) != inputBits(spec, 1, i);
      ValueSpec other = spec;
      other.salt = 78;
      saltDiffers += inputBits(spec, 0, i) != inputBits(other, 0, i);
    }
    CHECK(differ > 200);
    CHECK(saltDiffers > 200);
  }
}

TEST_CASE("the pre-multiplied sum's scalar is 2 in every type") {
  CHECK(preMulScalarBits(weftInt8) == 2);
  CHECK(preMulScalarBits(weftUint64) == 2);
  CHECK(preMulScalarBits(weftFloat16) == 0x4000);
  CHECK(preMulScalarBits(weftBfloat16) == 0x4000);
  CHECK(preMulScalarBits(weftFloat32) == 0x40000000);
  CHECK(preMulScalarBits(weftFloat64) == 0x4000000000000000ull);
  CHECK(preMulScalarBits(weftFloat8e4m3) == 0x40);
  CHECK(preMulScalarBits(weftFloat8e5m2) == 0x40);
}

TEST_CASE("sentinels fit the type and vary with position, guard bytes vary too") {
  int differ = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    CHECK(sentinelBits(2, 0, i) <= 0xffff);
    differ += sentinelBits(4, 0, i) != sentinelBits(4, 1, i);
    CHECK(guardByte(i) != guardByte(i + 1));
  }
  CHECK(differ > 90);
}
