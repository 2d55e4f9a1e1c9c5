// reduce-bench: throughput of weft's reduction kernels (algorithms/reduce) against memcpy of the
// same bytes, with Google Benchmark.
//
// Every datatype x {sum, prod, max, min} (reduceKernel), plus scale and divide, at 4 KiB, 256 KiB,
// 4 MiB and 64 MiB (L1/L2, L2, L3 and DRAM on the build machines); and the sum of 8 sources of
// float, half, bfloat16 and int32 up to 4 MiB, folded by reduceManyKernel (sum8-folded) or chained
// through reduceKernel (sum8-chained). Kernels run in place,
// dst == a, as the executor calls them; "bytes" is the buffer size S, so a reduction that reads
// 2S and writes S and a memcpy that reads S and writes S are both credited S per call. Counters:
//   GB/s       S * calls / this thread's CPU time, 1 GB = 1e9 B (CPU time, as Google Benchmark's
//              own columns: on a shared 2-core machine, wall time mostly measures the neighbours)
//   x_memcpy   GB/s divided by memcpy's GB/s at the same size, measured earlier in this run (the
//              memcpy rows run first; absent when a filter leaves them out)
//
//   reduce-bench                                   # everything (a few minutes)
//   reduce-bench --benchmark_filter='float|memcpy' --benchmark_min_time=0.2
//
// Values stay ordinary numbers in every iteration (subnormals would trip x86's slow path and
// measure the wrong thing): inputs are small integers in the type; prod multiplies by +-1, scale
// by -1, divide divides floating types by -1 and integers by 3 (the integer paths cost the same
// for any divisor but +-1, which are a copy and a negation).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "algorithms/reduce/datatype.hpp"
#include "algorithms/reduce/reduce.hpp"

namespace {

using weft::ReduceKind;

constexpr size_t kSizes[] = {size_t{4} << 10, size_t{256} << 10, size_t{4} << 20, size_t{64} << 20};
constexpr size_t kMaxBytes = size_t{64} << 20;

constexpr weftDataType_t kTypes[] = {weftInt8,    weftUint8,    weftInt32,      weftUint32,
                                     weftInt64,   weftUint64,   weftFloat16,    weftFloat32,
                                     weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};

// memcpy GB/s per size, filled by the memcpy rows for the x_memcpy counter of later rows.
std::map<size_t, double>& memcpyRate() {
  static std::map<size_t, double> rates;
  return rates;
}

// Two 64 MiB buffers for every benchmark, allocated and faulted in once.
struct Buffers {
  unsigned char* a;
  unsigned char* b;
};
Buffers& buffers() {
  static Buffers bufs = [] {
    auto* a = static_cast<unsigned char*>(std::aligned_alloc(4096, kMaxBytes));
    auto* b = static_cast<unsigned char*>(std::aligned_alloc(4096, kMaxBytes));
    if (!a || !b) std::abort();
    std::memset(a, 0, kMaxBytes);
    std::memset(b, 0, kMaxBytes);
    return Buffers{a, b};
  }();
  return bufs;
}

// Stores the small integer v as one element of `type` at p.
void storeValue(unsigned char* p, weftDataType_t type, int v) {
  const auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (type) {
    case weftInt8: return put(static_cast<int8_t>(v));
    case weftUint8: return put(static_cast<uint8_t>(v));
    case weftInt32: return put(static_cast<int32_t>(v));
    case weftUint32: return put(static_cast<uint32_t>(v));
    case weftInt64: return put(static_cast<int64_t>(v));
    case weftUint64: return put(static_cast<uint64_t>(v));
    case weftFloat32: return put(static_cast<float>(v));
    case weftFloat64: return put(static_cast<double>(v));
    case weftFloat16: return put(weft::floatToHalf(static_cast<float>(v)));
    case weftBfloat16: return put(weft::floatToBfloat16(static_cast<float>(v)));
    case weftFloat8e4m3: return put(weft::floatToFp8e4m3(static_cast<float>(v)));
    case weftFloat8e5m2: return put(weft::floatToFp8e5m2(static_cast<float>(v)));
    default: return;
  }
}

// a[i] in 1..13 and -6..6 patterns; b the same, or +-1 when `unitB` (prod).
void fill(weftDataType_t type, size_t bytes, bool unitB) {
  const size_t size = weft::datatypeSize(type);
  Buffers& bufs = buffers();
  for (size_t i = 0; i < bytes / size; ++i) {
    storeValue(bufs.a + i * size, type, static_cast<int>(i % 13) + 1);
    storeValue(bufs.b + i * size, type, unitB ? ((i & 1) ? 1 : -1) : static_cast<int>(i % 13) - 6);
  }
}

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs `call` per iteration and sets the counters. CPU time is also taken here, around the loop,
// to compute GB/s for the x_memcpy ratio (Google Benchmark does not hand its own timing back).
template <class Call>
void timeLoop(benchmark::State& state, size_t bytes, Call call, bool isMemcpy) {
  const double t0 = threadCpuSeconds();
  for (auto _ : state) {
    call();
    benchmark::ClobberMemory();
  }
  const double seconds = threadCpuSeconds() - t0;
  const double gbs =
      static_cast<double>(bytes) * static_cast<double>(state.iterations()) / seconds / 1e9;
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["GB/s"] = gbs;
  if (isMemcpy) {
    memcpyRate()[bytes] = gbs;
  } else if (auto it = memcpyRate().find(bytes); it != memcpyRate().end()) {
    state.counters["x_memcpy"] = gbs / it->second;
  }
}

void benchMemcpy(benchmark::State& state, size_t bytes) {
  Buffers& bufs = buffers();
  timeLoop(
      state, bytes, [&] { std::memcpy(bufs.a, bufs.b, bytes); }, true);
}

void benchKernel(benchmark::State& state, weftDataType_t type, ReduceKind kind, size_t bytes) {
  const weft::ReduceFn fn = weft::reduceKernel(type, kind);
  if (!fn) {
    state.SkipWithError("no kernel");
    return;
  }
  fill(type, bytes, kind == ReduceKind::Prod);
  Buffers& bufs = buffers();
  const size_t count = bytes / weft::datatypeSize(type);
  timeLoop(
      state, bytes, [&] { fn(bufs.a, bufs.a, bufs.b, count); }, false);
}

void benchScale(benchmark::State& state, weftDataType_t type, size_t bytes) {
  fill(type, bytes, false);
  unsigned char scalar[8] = {};
  storeValue(scalar, type, -1);
  Buffers& bufs = buffers();
  const size_t count = bytes / weft::datatypeSize(type);
  timeLoop(
      state, bytes, [&] { weft::scale(bufs.a, bufs.a, count, type, scalar); }, false);
}

void benchDivide(benchmark::State& state, weftDataType_t type, size_t bytes) {
  fill(type, bytes, false);
  const int divisor = weft::isFloatingPoint(type) ? -1 : 3;
  Buffers& bufs = buffers();
  const size_t count = bytes / weft::datatypeSize(type);
  timeLoop(
      state, bytes, [&] { weft::divide(bufs.a, bufs.a, count, type, divisor); }, false);
}

// Folding kSources buffers of S bytes into the first (as the shared-memory allreduce folds the
// ranks' inputs): reduceManyKernel against chaining reduceKernel one source at a time. Credited S
// per call, as the rows above.
constexpr int kSources = 8;
constexpr size_t kManyMaxBytes = size_t{4} << 20;

void benchFold(benchmark::State& state, weftDataType_t type, size_t bytes, bool many) {
  static std::vector<unsigned char*> sources = [] {
    std::vector<unsigned char*> v;
    for (int k = 0; k < kSources; ++k) {
      auto* p = static_cast<unsigned char*>(std::aligned_alloc(4096, kManyMaxBytes));
      if (!p) std::abort();
      std::memset(p, 0, kManyMaxBytes);
      v.push_back(p);
    }
    return v;
  }();
  const size_t size = weft::datatypeSize(type);
  const size_t count = bytes / size;
  for (int k = 0; k < kSources; ++k)
    for (size_t i = 0; i < count; ++i) storeValue(sources[k] + i * size, type, (k & 1) ? 1 : -1);
  const std::vector<const void*> srcs(sources.begin(), sources.end());
  const weft::ReduceFn pair = weft::reduceKernel(type, ReduceKind::Sum);
  const weft::ReduceManyFn fold = weft::reduceManyKernel(type, ReduceKind::Sum);
  timeLoop(
      state, bytes,
      [&] {
        if (many) return fold(sources[0], srcs.data(), kSources, count);
        for (int k = 1; k < kSources; ++k) pair(sources[0], sources[0], sources[k], count);
      },
      false);
}

std::string name(const std::string& op, weftDataType_t type, size_t bytes) {
  return op + "/" + weft::datatypeName(type) + "/" + std::to_string(bytes);
}

void registerAll() {
  // memcpy first, so that every later row finds its x_memcpy reference.
  for (size_t bytes : kSizes) {
    benchmark::RegisterBenchmark(("memcpy/" + std::to_string(bytes)).c_str(), benchMemcpy, bytes);
  }
  const std::pair<const char*, ReduceKind> kinds[] = {{"sum", ReduceKind::Sum},
                                                      {"prod", ReduceKind::Prod},
                                                      {"max", ReduceKind::Max},
                                                      {"min", ReduceKind::Min}};
  for (weftDataType_t type : kTypes) {
    for (size_t bytes : kSizes) {
      for (const auto& [op, kind] : kinds) {
        benchmark::RegisterBenchmark(name(op, type, bytes).c_str(), benchKernel, type, kind, bytes);
      }
      benchmark::RegisterBenchmark(name("scale", type, bytes).c_str(), benchScale, type, bytes);
      benchmark::RegisterBenchmark(name("divide", type, bytes).c_str(), benchDivide, type, bytes);
    }
  }
  for (weftDataType_t type : {weftFloat32, weftFloat16, weftBfloat16, weftInt32}) {
    for (size_t bytes : kSizes) {
      if (bytes > kManyMaxBytes) continue;
      benchmark::RegisterBenchmark(name("sum8-chained", type, bytes).c_str(), benchFold, type,
                                   bytes, false);
      benchmark::RegisterBenchmark(name("sum8-folded", type, bytes).c_str(), benchFold, type, bytes,
                                   true);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
