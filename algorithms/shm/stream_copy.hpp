// Copies into memory that will not be read again soon (a collective's output) with
// non-temporal stores: the data goes to memory without first reading the destination lines
// into the cache and without evicting the working set. Worth it only for large copies.
#pragma once

#include <cstddef>

namespace weft {

inline constexpr size_t kStreamCopyMinBytes = 4 << 10;
// Outputs at least this large are written with streaming stores (measured on the 2-core build
// machine: from 16 MiB they beat cached stores, below they do not).
inline constexpr size_t kStreamOutputBytes = 16 << 20;

// memcpy semantics (no overlap). Falls back to memcpy below kStreamCopyMinBytes or without
// AVX2.
void streamCopy(void* dst, const void* src, size_t bytes);

}  // namespace weft
