#include "values.hpp"

#include <algorithm>
#include <cmath>

#include "formats.hpp"

namespace weft::perf {
namespace {

// splitmix64's finalizer: cheap, and every input bit affects every output bit.
constexpr uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hashOf(uint64_t salt, int rank, uint64_t index) {
  return mix(salt ^ (index * 0xd1b54a32d192ed03ULL) ^
             (static_cast<uint64_t>(rank) * 0x8cb92ba72f3d8dd7ULL));
}

// An integer whose magnitude, summed over the n ranks, never exceeds `budget`: in [-m, m] with
// m = budget / n; when n > budget, +-1 on at most `budget` ranks per element and 0 elsewhere.
double boundedValue(uint64_t budget, int nranks, int rank, uint64_t index, uint64_t h) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  const uint64_t m = std::min<uint64_t>(budget / n, 1000);
  if (m >= 1) return static_cast<double>(static_cast<int64_t>(h % (2 * m + 1)) - int64_t(m));
  const uint64_t k = (n + budget - 1) / budget;  // ranks r with r % k == index % k: <= budget
  if (static_cast<uint64_t>(rank) % k != index % k) return 0;
  return (h & 1) ? 1.0 : -1.0;
}

int64_t signExtend(uint64_t v, size_t typeSize) {
  const int shift = 64 - 8 * static_cast<int>(typeSize);
  return static_cast<int64_t>(v << shift) >> shift;
}

bool isSigned(weftDataType_t type) {
  return type == weftInt8 || type == weftInt32 || type == weftInt64;
}

Expected integerReduction(const ValueSpec& s, uint64_t index) {
  const size_t size = datatypeInfo(s.type).size;
  const uint64_t mask = typeMask(size);
  const bool sign = isSigned(s.type);
  const auto less = [&](uint64_t a, uint64_t b) {
    return sign ? signExtend(a, size) < signExtend(b, size) : a < b;
  };
  uint64_t acc = inputBits(s, 0, index);
  if (*s.op == ReduceOp::PreMulSum) acc *= 2;
  for (int r = 1; r < s.nranks; ++r) {
    const uint64_t x = inputBits(s, r, index);
    switch (*s.op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc += x; break;
      case ReduceOp::PreMulSum: acc += 2 * x; break;
      case ReduceOp::Prod: acc *= x; break;
      case ReduceOp::Max: acc = less(acc & mask, x) ? x : acc; break;
      case ReduceOp::Min: acc = less(x, acc & mask) ? x : acc; break;
    }
  }
  acc &= mask;
  if (*s.op == ReduceOp::Avg) {
    // The wrapped sum, then division truncating toward zero.
    const auto n = static_cast<int64_t>(s.nranks);
    acc = sign ? static_cast<uint64_t>(signExtend(acc, size) / n) : acc / static_cast<uint64_t>(n);
    acc &= mask;
  }
  Expected e;
  e.bits = acc;
  return e;
}

Expected floatingReduction(const ValueSpec& s, uint64_t index) {
  // Every input and partial result below is an integer well inside the exact range of double.
  double acc = 0, magnitude = 0;
  for (int r = 0; r < s.nranks; ++r) {
    const double x = floatingInput(s, r, index);
    magnitude += std::fabs(x);
    switch (*s.op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc += x; break;
      case ReduceOp::PreMulSum: acc += kPreMulScalar * x; break;
      case ReduceOp::Prod: acc = r == 0 ? x : acc * x; break;
      case ReduceOp::Max: acc = r == 0 ? x : std::max(acc, x); break;
      case ReduceOp::Min: acc = r == 0 ? x : std::min(acc, x); break;
    }
  }
  Expected e;
  e.value = acc;
  if (*s.op == ReduceOp::Avg) {
    // weft (like NCCL) computes avg as sum over ranks of x_r * rcp, rcp = 1/n rounded to the
    // type, each product rounded to the type, each partial sum rounded to the type, in an order
    // of its choosing. With u the unit roundoff: rcp = (1/n)(1+d0), each term has a further
    // (1+d1), and a sum of n terms in any order (any tree) is exact up to a relative (n-1)u on
    // the sum of |terms| (first order, Higham's bound for recursive and pairwise summation).
    // Hence |got - mean| <= (n + 1) u sum|x|/n + O(u^2); (n + 2) covers the second-order terms
    // for every n and u here, and one smallest subnormal covers results that underflow.
    const double n = s.nranks;
    e.value = acc / n;
    e.tolerance = (n + 2) * unitRoundoff(s.type) * (magnitude / n) + smallestSubnormal(s.type);
  }
  e.bits = encodeFloating(s.type, e.value);
  return e;
}

}  // namespace

uint64_t exactIntegerLimit(weftDataType_t type) {
  switch (type) {
    case weftFloat8e5m2: return 8;      // 3 significant bits
    case weftFloat8e4m3: return 16;     // 4
    case weftBfloat16: return 256;      // 8
    case weftFloat16: return 2048;      // 11
    case weftFloat32: return 1u << 24;  // 24
    case weftFloat64: return uint64_t{1} << 53;
    default: return ~uint64_t{0};
  }
}

double floatingInput(const ValueSpec& s, int rank, uint64_t index) {
  const uint64_t h = hashOf(s.salt, rank, index);
  const uint64_t limit = exactIntegerLimit(s.type);
  switch (s.op.value_or(ReduceOp::Sum)) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return boundedValue(limit, s.nranks, rank, index, h);
    case ReduceOp::PreMulSum: return boundedValue(limit / 2, s.nranks, rank, index, h);
    case ReduceOp::Max:
    case ReduceOp::Min: return static_cast<double>(static_cast<int64_t>(h % 17) - 8);
    case ReduceOp::Prod: {
      // One rank per element contributes 2: the product is +-2, exact in every type.
      const uint64_t n = static_cast<uint64_t>(s.nranks);
      const double m = (static_cast<uint64_t>(rank) + index) % n == 0 ? 2.0 : 1.0;
      return (h & 3) == 0 ? -m : m;
    }
  }
  return 0;
}

uint64_t inputBits(const ValueSpec& s, int rank, uint64_t index) {
  const DatatypeInfo& info = datatypeInfo(s.type);
  if (!s.op || !info.floating) return hashOf(s.salt, rank, index) & typeMask(info.size);
  return encodeFloating(s.type, floatingInput(s, rank, index));
}

Expected expectedReduction(const ValueSpec& s, uint64_t index) {
  return datatypeInfo(s.type).floating ? floatingReduction(s, index) : integerReduction(s, index);
}

bool resultMatches(const ValueSpec& s, const Expected& expected, uint64_t gotBits) {
  if (!datatypeInfo(s.type).floating) return gotBits == expected.bits;
  // By value, so that -0 and +0 are both a correct zero (a sum may produce either); a NaN
  // never matches.
  const double got = decodeFloating(s.type, gotBits);
  return std::fabs(got - expected.value) <= expected.tolerance;
}

uint64_t preMulScalarBits(weftDataType_t type) {
  if (datatypeInfo(type).floating) return encodeFloating(type, kPreMulScalar);
  return static_cast<uint64_t>(kPreMulScalar);
}

uint64_t sentinelBits(size_t typeSize, int buffer, uint64_t index) {
  return mix(0x5e471e11ULL + static_cast<uint64_t>(buffer) * 0x9e3779b97f4a7c15ULL +
             index * 0xc2b2ae3d27d4eb4fULL) &
         typeMask(typeSize);
}

uint8_t guardByte(size_t position) {
  return static_cast<uint8_t>(0xa5 ^ (position * 37));
}

}  // namespace weft::perf
