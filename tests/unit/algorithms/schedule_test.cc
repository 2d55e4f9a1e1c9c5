// Every schedule builder, run over the loopback transport for every rank count 1..17 and
// awkward counts, in place and out of place, checked against a plain reference computed here.
// Reductions use this file's own kernels (wrapping unsigned add and max) so that the test checks
// data movement only; the arithmetic of every datatype x op is checked in tests/unit/reduce and
// end to end in tests/unit/collectives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/executor.hpp"
#include "transports/loopback/loopback.hpp"

using namespace weft;

namespace {

template <class T>
void addKernel(void* dst, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, static_cast<const T*>(a) + i, sizeof x);
    std::memcpy(&y, static_cast<const T*>(b) + i, sizeof y);
    const T z = static_cast<T>(x + y);
    std::memcpy(static_cast<T*>(dst) + i, &z, sizeof z);
  }
}

template <class T>
void maxKernel(void* dst, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, static_cast<const T*>(a) + i, sizeof x);
    std::memcpy(&y, static_cast<const T*>(b) + i, sizeof y);
    const T z = std::max(x, y);
    std::memcpy(static_cast<T*>(dst) + i, &z, sizeof z);
  }
}

uint64_t mix(uint64_t x) {  // splitmix64: deterministic test data
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Sizes of the send and receive buffers of one rank, in elements.
struct Sizes {
  uint64_t send, recv;
};
Sizes bufferSizes(const CollectiveShape& s) {
  const uint64_t n = s.nranks, c = s.count;
  const bool root = s.rank == s.root;
  switch (s.collective) {
    case Collective::AllReduce: return {c, c};
    case Collective::Broadcast: return {c, c};
    case Collective::Reduce: return {c, root ? c : 0};
    case Collective::AllGather: return {c, n * c};
    case Collective::ReduceScatter: return {n * c, c};
    case Collective::AlltoAll: return {n * c, n * c};
    case Collective::Gather: return {c, root ? n * c : 0};
    case Collective::Scatter: return {root ? n * c : 0, c};
    default: return {0, 0};
  }
}

// Where the send buffer starts inside the receive buffer (or the other way round) in place.
uint64_t inPlaceOffset(const CollectiveShape& s) {
  switch (s.collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter: return uint64_t(s.rank) * s.count;
    case Collective::Gather:
    case Collective::Scatter: return uint64_t(s.root) * s.count;
    default: return 0;
  }
}

template <class T>
struct RankBuffers {
  std::vector<T> input;  // what the rank contributes (send-buffer layout)
  std::vector<T> storage;  // the memory handed to the executor (one or two buffers)
  std::vector<T> recvStorage;
  const void* send = nullptr;
  void* recv = nullptr;
};

template <class T>
void runCase(const Algorithm& algo, Collective coll, int n, uint64_t count, bool inPlace,
             uint64_t chunkBytes, bool useMax) {
  const int root = n > 2 ? n / 2 : 0;
  auto transports = createLoopbackTransports(n);
  std::vector<CollectiveShape> shapes(n);
  std::vector<Schedule> schedules(n);
  std::vector<RankBuffers<T>> bufs(n);
  std::vector<std::vector<uint8_t>> scratch(n);
  for (int r = 0; r < n; ++r) {
    CollectiveShape& s = shapes[r];
    s = {coll, n, r, count, sizeof(T), root, false, chunkBytes};
    const Sizes size = bufferSizes(s);
    RankBuffers<T>& b = bufs[r];
    b.input.resize(size.send);
    for (uint64_t i = 0; i < size.send; ++i)
      b.input[i] = static_cast<T>(mix((uint64_t(r) << 40) ^ i ^ (count << 20)));
    // In place only where the collective has an in-place form on this rank.
    const bool rankInPlace =
        inPlace && !(coll == Collective::Reduce && r != root) &&
        !(coll == Collective::Gather && r != root) && !(coll == Collective::Scatter && r != root);
    s.inPlace = rankInPlace;
    if (rankInPlace) {
      const uint64_t off = inPlaceOffset(s);
      const bool sendIsLarger = size.send > size.recv;
      b.storage.assign(std::max(size.send, size.recv), T(0x5a));
      if (sendIsLarger) {
        std::copy(b.input.begin(), b.input.end(), b.storage.begin());
        b.send = b.storage.data();
        b.recv = b.storage.data() + off;
      } else {
        std::copy(b.input.begin(), b.input.end(), b.storage.begin() + off);
        b.recv = b.storage.data();
        b.send = b.storage.data() + off;
      }
    } else {
      b.storage = b.input;
      b.recvStorage.assign(size.recv, T(0x5a));
      b.send = size.send ? b.storage.data() : nullptr;
      b.recv = size.recv ? b.recvStorage.data() : nullptr;
    }
    schedules[r] = algo.build(s);
    scratch[r].resize(schedules[r].scratchBytes);
  }
  std::vector<std::unique_ptr<Execution>> execs;
  std::vector<Execution*> raw;
  for (int r = 0; r < n; ++r) {
    Work w;
    w.schedule = &schedules[r];
    w.buffers = {bufs[r].send, bufs[r].recv, scratch[r].data()};
    w.reduce = useMax ? &maxKernel<T> : &addKernel<T>;
    w.elemSize = sizeof(T);
    w.name = collectiveName(coll);
    ExecutionContext ctx;
    ctx.rank = r;
    ctx.deadline = Deadline::afterMs(60000);
    execs.push_back(std::make_unique<Execution>(*transports[r], std::vector<Work>{w}, ctx));
    raw.push_back(execs.back().get());
  }
  runToCompletion(raw);

  auto combine = [&](T a, T b) { return useMax ? std::max(a, b) : static_cast<T>(a + b); };
  auto reduced = [&](uint64_t i) {
    T acc = bufs[0].input[i];
    for (int q = 1; q < n; ++q) acc = combine(acc, bufs[q].input[i]);
    return acc;
  };
  uint64_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    const T* out = static_cast<const T*>(bufs[r].recv);
    const uint64_t c = count;
    auto expectAt = [&](uint64_t i, T want) {
      if (out[i] != want) ++wrong;
    };
    switch (coll) {
      case Collective::AllReduce:
        for (uint64_t i = 0; i < c; ++i) expectAt(i, reduced(i));
        break;
      case Collective::Reduce:
        if (r == root)
          for (uint64_t i = 0; i < c; ++i) expectAt(i, reduced(i));
        break;
      case Collective::ReduceScatter:
        for (uint64_t i = 0; i < c; ++i) expectAt(i, reduced(uint64_t(r) * c + i));
        break;
      case Collective::AllGather:
        for (int q = 0; q < n; ++q)
          for (uint64_t i = 0; i < c; ++i) expectAt(q * c + i, bufs[q].input[i]);
        break;
      case Collective::Broadcast:
        for (uint64_t i = 0; i < c; ++i) expectAt(i, bufs[root].input[i]);
        break;
      case Collective::AlltoAll:
        for (int q = 0; q < n; ++q)
          for (uint64_t i = 0; i < c; ++i) expectAt(q * c + i, bufs[q].input[r * c + i]);
        break;
      case Collective::Gather:
        if (r == root)
          for (int q = 0; q < n; ++q)
            for (uint64_t i = 0; i < c; ++i) expectAt(q * c + i, bufs[q].input[i]);
        break;
      case Collective::Scatter:
        for (uint64_t i = 0; i < c; ++i) expectAt(i, bufs[root].input[r * c + i]);
        break;
      default: break;
    }
  }
  INFO(algo.name << " " << collectiveName(coll) << " n=" << n << " count=" << count
                 << " elem=" << sizeof(T) << (inPlace ? " in-place" : " out-of-place")
                 << " chunk=" << chunkBytes << (useMax ? " max" : " sum"));
  REQUIRE(wrong == 0);
}

const uint64_t kCounts[] = {0, 1, 2, 7, 1023, 65537};

template <class T>
void sweep(Collective coll, bool useMax, uint64_t chunkBytes) {
  for (const Algorithm& algo : algorithmRegistry()) {
    if (!algo.serves(coll)) continue;
    for (int n = 1; n <= 17; ++n)
      for (uint64_t count : kCounts)
        for (bool inPlace : {false, true})
          runCase<T>(algo, coll, n, count, inPlace, chunkBytes, useMax);
  }
}

}  // namespace

TEST_CASE("every allreduce schedule matches the reference for 1..17 ranks and awkward counts") {
  sweep<uint32_t>(Collective::AllReduce, false, 4096);
  sweep<uint8_t>(Collective::AllReduce, true, 256);
  sweep<uint64_t>(Collective::AllReduce, false, 1 << 20);
}

TEST_CASE("every reduce-scatter schedule matches the reference for 1..17 ranks") {
  sweep<uint16_t>(Collective::ReduceScatter, false, 4096);
  sweep<uint64_t>(Collective::ReduceScatter, true, 1 << 20);
}

TEST_CASE("every allgather schedule matches the reference for 1..17 ranks") {
  sweep<uint8_t>(Collective::AllGather, false, 1000);
  sweep<uint64_t>(Collective::AllGather, false, 1 << 20);
}

TEST_CASE("every broadcast schedule matches the reference for 1..17 ranks") {
  sweep<uint32_t>(Collective::Broadcast, false, 4096);
  sweep<uint16_t>(Collective::Broadcast, false, 1 << 20);
}

TEST_CASE("every reduce schedule matches the reference for 1..17 ranks") {
  sweep<uint32_t>(Collective::Reduce, false, 4096);
  sweep<uint8_t>(Collective::Reduce, true, 1 << 20);
}

TEST_CASE("every alltoall, gather and scatter schedule matches the reference for 1..17 ranks") {
  sweep<uint32_t>(Collective::AlltoAll, false, 4096);
  sweep<uint8_t>(Collective::Gather, false, 4096);
  sweep<uint64_t>(Collective::Scatter, false, 4096);
}

TEST_CASE("schedules give every message to a peer a distinct tag in send order") {
  CollectiveShape s{Collective::AllReduce, 5, 2, 1000, 4, 0, false, 256};
  Schedule sched = buildRing(s);
  uint32_t expected = 0;
  for (const Step& step : sched.steps)
    if (step.kind == StepKind::Send) CHECK(step.tag == expected++);
  CHECK(sched.maxTag + 1 == expected);
}
