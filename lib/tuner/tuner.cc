#include "lib/tuner/tuner.hpp"

#include <algorithm>

#include "lib/base/env.hpp"
#include "lib/base/error.hpp"

namespace weft {

TunerChoice choose(Collective collective, int nranks, uint64_t bytes,
                   const TunerOverrides& overrides, bool nativeAvailable) {
  (void)nranks;
  TunerChoice choice;
  choice.algorithm = overrides.algorithm[static_cast<int>(collective)];
  if (!choice.algorithm && nativeAvailable) return choice;
  if (!choice.algorithm) {
    for (const Algorithm& a : algorithmRegistry()) {
      if (a.serves(collective)) {
        choice.algorithm = &a;
        break;
      }
    }
  }
  if (!choice.algorithm)
    fail(weftInternalError, "no algorithm serves {}", collectiveName(collective));
  uint64_t chunk = overrides.chunkBytes;
  if (chunk == 0) chunk = static_cast<uint64_t>(envOrDefaults().chunkBytes);
  if (chunk == 0) chunk = kDefaultChunkBytes;
  choice.chunkBytes = std::max(chunk, bytes / kMaxChunksPerBuffer + 1);
  return choice;
}

}  // namespace weft
