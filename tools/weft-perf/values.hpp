// The values weft-perf writes into input buffers and the results it expects back.
//
// Reductions are checked exactly wherever the arithmetic allows it, whatever order or tree
// weft reduces in: floating inputs are small integers chosen so that every partial result stays
// an exactly representable integer (sum, premulsum: the sum of |inputs| never exceeds the
// largest integer up to which the type holds every integer; max/min: integers in [-8, 8]; prod:
// +-1 and +-2 with one 2 per element). Integer inputs are arbitrary: their arithmetic wraps, and
// the expected value wraps the same way in the same width. Floating avg is the one inexact
// operation (weft multiplies each input by a rounded 1/n, then sums); it is compared with a
// tolerance derived in values.cc. Collectives that only move data use arbitrary bit patterns
// (NaNs included) compared bit for bit.
#pragma once

#include <weft.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "datatypes.hpp"

namespace weft::perf {

struct ValueSpec {
  weftDataType_t type = weftFloat32;
  std::optional<ReduceOp> op;  // nullopt: the collective only moves data
  int nranks = 1;
  uint64_t salt = 0;  // varies the data between rows
};

// Bits of element `index` of rank `rank`'s input, in the low bytes (memory order).
uint64_t inputBits(const ValueSpec& spec, int rank, uint64_t index);

// A reducing spec's floating input as a number (the value inputBits encodes).
double floatingInput(const ValueSpec& spec, int rank, uint64_t index);

// The reduction of element `index` over all ranks, and whether `gotBits` is an acceptable
// result for it.
struct Expected {
  uint64_t bits = 0;     // integers: the exact result
  double value = 0;      // floating: the exact result (for avg, the exact mean)
  double tolerance = 0;  // floating: the accepted |got - value| (0 except avg)
};
Expected expectedReduction(const ValueSpec& spec, uint64_t index);
bool resultMatches(const ValueSpec& spec, const Expected& expected, uint64_t gotBits);

// Every integer of magnitude up to this is exactly representable in the floating `type`.
uint64_t exactIntegerLimit(weftDataType_t type);

// The pre-multiplied sum's scalar, 2, as `type`'s bits.
inline constexpr double kPreMulScalar = 2.0;
uint64_t preMulScalarBits(weftDataType_t type);

// The pattern written where an operation must not write, for element `index` of buffer
// `buffer`; and the byte pattern of the guard areas around buffers.
uint64_t sentinelBits(size_t typeSize, int buffer, uint64_t index);
uint8_t guardByte(size_t position);

// All ones in the low typeSize bytes.
constexpr uint64_t typeMask(size_t typeSize) {
  return typeSize >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * typeSize)) - 1;
}

}  // namespace weft::perf
