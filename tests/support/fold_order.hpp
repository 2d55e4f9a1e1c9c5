// The order in which weft's shared-memory collectives fold a reduction (algorithms/shm/README.md,
// "Reduction order"), and inputs whose float sums give different bits in any other order, so a
// test can check a path's result bit for bit against the plain fold: reference.hpp's inputs are
// exact in every order, these in none but one.
#pragma once

#include <cmath>
#include <cstdint>

#include "algorithms/schedule.hpp"
#include "algorithms/shm/shm_collectives.hpp"

namespace weft::testing {

// Rank r's element i: all 24 bits of mantissa, either sign, and 40 binades between the
// elements, so that sums round differently in different orders.
inline float orderedInput(int r, uint64_t i) {
  const uint64_t h = (i * 0x9E3779B97F4A7C15ULL + r * 0xBF58476D1CE4E5B9ULL) >> 40;
  const float mantissa = 1.0f + static_cast<float>(h & 0x7FFFFF) / (1 << 23);
  const int exponent = static_cast<int>((5 * r + 3 * i) % 40) - 20;
  return std::ldexp((h >> 23) & 1 ? -mantissa : mantissa, exponent);
}

// The rank whose input comes first in the fold of element i of rank r's output (count elements
// of 4 bytes), the others following in turn: allreduce up to ShmCollectives::kInlineBytes and
// reduce in rank order; a larger allreduce from the rank whose slice of the buffer holds i
// (slices as NCCL's blocks: the first count % n have one element more); reduce-scatter from
// the rank whose block it is.
inline int firstInFold(Collective coll, int n, int r, uint64_t count, uint64_t i) {
  if (coll == Collective::ReduceScatter) return r;
  if (coll == Collective::Reduce || count * sizeof(float) <= ShmCollectives::kInlineBytes)
    return 0;
  uint64_t end = 0;
  for (int q = 0; q < n; ++q) {
    end += count / n + (static_cast<uint64_t>(q) < count % n ? 1 : 0);
    if (i < end) return q;
  }
  return n - 1;
}

// The float32 sum of element i of rank r's output, folded as weft's shared-memory paths do;
// `input(q, j)` is rank q's input element j (j offset by r * count for reduce-scatter).
template <class Input>
float foldedSum(Collective coll, int n, int r, uint64_t count, uint64_t i, const Input& input) {
  const uint64_t j = coll == Collective::ReduceScatter ? r * count + i : i;
  const int first = firstInFold(coll, n, r, count, i);
  float sum = input(first, j);
  for (int q = first + 1; q < n; ++q) sum = sum + input(q, j);
  for (int q = 0; q < first; ++q) sum = sum + input(q, j);
  return sum;
}

}  // namespace weft::testing
