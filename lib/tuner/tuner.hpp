// The tuner: which algorithm, and which pipeline chunk size, a collective runs with. For now:
// the native shared-memory collective when every rank shares the host, else the registry's
// first algorithm for the collective, with a fixed chunk size; the cost model replaces this
// (issue "algorithm library and tuner").
#pragma once

#include <array>
#include <cstdint>

#include "algorithms/algorithm.hpp"

namespace weft {

// What a caller can force instead of the tuner's choice (tests; WEFT_ALGO later).
struct TunerOverrides {
  std::array<const Algorithm*, kNumCollectives> algorithm{};
  uint64_t chunkBytes = 0;  // 0: the tuner decides
};

struct TunerChoice {
  const Algorithm* algorithm = nullptr;  // null: the native shared-memory collective
  uint64_t chunkBytes = 0;
};

inline constexpr uint64_t kDefaultChunkBytes = uint64_t{512} << 10;
// The executor's tag field has room for 2^23 messages per peer and operation; chunks are made
// large enough that no schedule comes near it.
inline constexpr uint64_t kMaxChunksPerBuffer = uint64_t{1} << 20;

// `nativeAvailable`: every rank shares this host and the native shared-memory collectives
// serve this collective; they win unless an algorithm is forced.
TunerChoice choose(Collective collective, int nranks, uint64_t bytes,
                   const TunerOverrides& overrides, bool nativeAvailable);

}  // namespace weft
