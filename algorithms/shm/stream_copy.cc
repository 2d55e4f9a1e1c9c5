#include "algorithms/shm/stream_copy.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace weft {
namespace {

__attribute__((target("avx2"))) void streamCopyAvx2(uint8_t* dst, const uint8_t* src,
                                                     size_t bytes) {
  // Align the destination to 32 bytes with a plain copy, stream the middle, copy the tail.
  const size_t head = (32 - (reinterpret_cast<uintptr_t>(dst) & 31)) & 31;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 128 <= bytes; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
  _mm_sfence();  // streamed stores are weakly ordered: publish them before any flag
  std::memcpy(dst + i, src + i, bytes - i);
}

}  // namespace

void prefetchForWrite(void* p, size_t bytes) {
  auto* line = static_cast<char*>(p);
  for (size_t i = 0; i < bytes; i += 64) {
#if defined(__x86_64__) || defined(__i386__)
    // PREFETCHW sits in the NOP space of CPUs without it.
    asm volatile("prefetchw %0" : : "m"(line[i]));
#else
    __builtin_prefetch(line + i, 1);
#endif
  }
}

void streamCopy(void* dst, const void* src, size_t bytes) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (bytes < kStreamCopyMinBytes || !avx2) {
    std::memcpy(dst, src, bytes);
    return;
  }
  streamCopyAvx2(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes);
}

}  // namespace weft
