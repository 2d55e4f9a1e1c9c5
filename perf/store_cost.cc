// store-cost: what one owner's share of a large 2-rank allreduce over weftMemAlloc buffers costs
// on one core, out of place against in place, next to a plain memcpy of the same bytes.
//
// allReducePeerRead (algorithms/shm/allreduce.cc) with buffers every rank maps: the owner of a
// slice of S bytes reads its own input and the peer's at that slice, reduces them into its own
// output and streams the result into the peer's output. This program runs exactly that on
// buffers of one process (memfd-backed and shared, as weftMemAlloc's), with weft's own kernels
// (reduceKernel, streamCopy), one piece of the slot size at a time:
//
//   memcpy       memcpy(out, in, 2S): the floor's per-rank work (memcpy-floor copies the whole
//                buffer of 2S bytes)
//   out-of-place reduce(outA, inA, inB), streamCopy(outB, outA)    reads 2S, writes 2S
//   in-place     reduce(inA, inA, inB), streamCopy(inB, inA)       reads 2S, writes 2S
//   scratch      reduce(piece, inA, inB), streamCopy(outA, piece), streamCopy(outB, piece),
//                with the piece in cache (an alternative that the out-of-place writes could take)
//
// All four read and write the same number of bytes; they differ in which lines the stores go to:
// out of place, to lines not in any cache. On the AMD EPYC build VM (stop 37) that costs about
// half as much time again as storing into lines just read (perf/README.md, commit 3a30b4c).
//
//   store-cost [-b min] [-e max] [-f factor] [-r reps] [-p pieceBytes]
//
// Sizes are S, the owner's slice (half the allreduce's buffer). Output: "# ..." comment lines,
// then per size the median over -r repetitions of each pattern's time in microseconds, and each
// over memcpy's. Exit status 0, 2 on a bad command line, 1 when memory cannot be had.
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "algorithms/reduce/reduce.hpp"
#include "algorithms/shm/stream_copy.hpp"

namespace {

struct Options {
  size_t minBytes = size_t{1} << 20;
  size_t maxBytes = size_t{64} << 20;
  size_t factor = 4;
  int reps = 7;
  size_t pieceBytes = size_t{1} << 20;  // the 2-rank slot size on the build VMs (one L2)
};

size_t parseSize(const char* s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  size_t unit = 1;
  if (*end == 'K') unit = size_t{1} << 10;
  if (*end == 'M') unit = size_t{1} << 20;
  if (*end == 'G') unit = size_t{1} << 30;
  return static_cast<size_t>(v) * unit;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* flag = argv[i];
    const char* value = argv[i + 1];
    if (!std::strcmp(flag, "-b"))
      o.minBytes = parseSize(value);
    else if (!std::strcmp(flag, "-e"))
      o.maxBytes = parseSize(value);
    else if (!std::strcmp(flag, "-f"))
      o.factor = parseSize(value);
    else if (!std::strcmp(flag, "-r"))
      o.reps = std::atoi(value);
    else if (!std::strcmp(flag, "-p"))
      o.pieceBytes = parseSize(value);
    else
      return false;
  }
  return argc % 2 == 1 && o.minBytes >= 4096 && o.minBytes <= o.maxBytes && o.factor >= 2 &&
         o.reps >= 1 && o.pieceBytes >= 4096 && o.pieceBytes % 64 == 0;
}

// Shared memory from a memfd, as weftMemAlloc's, every page touched.
float* sharedRegion(size_t bytes) {
  const int fd = static_cast<int>(syscall(SYS_memfd_create, "store-cost", 0));
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return nullptr;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, 0, bytes);
  return static_cast<float*>(p);
}

template <typename F>
double medianMicros(int reps, F&& pass) {
  pass();  // warm-up: every line once where this pattern leaves it
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    times.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "usage: store-cost [-b min] [-e max] [-f factor] [-r reps] [-p piece]\n");
    return 2;
  }
  const weft::ReduceFn sum = weft::reduceKernel(weftFloat32, weft::ReduceKind::Sum);
  float* inA = sharedRegion(o.maxBytes);
  float* inB = sharedRegion(o.maxBytes);
  float* outA = sharedRegion(o.maxBytes);
  float* outB = sharedRegion(o.maxBytes);
  float* copyIn = sharedRegion(2 * o.maxBytes);
  float* copyOut = sharedRegion(2 * o.maxBytes);
  std::vector<float> piece(o.pieceBytes / sizeof(float));
  if (!inA || !inB || !outA || !outB || !copyIn || !copyOut) {
    std::fprintf(stderr, "store-cost: cannot map %zu bytes of shared memory\n", 8 * o.maxBytes);
    return 1;
  }
  std::printf("# one owner's slice of S bytes of a 2-rank float sum allreduce, pieces of %zu B\n",
              o.pieceBytes);
  std::printf("# median of %d passes, us; ratios over memcpy of 2S\n", o.reps);
  std::printf("%12s %10s %12s %10s %10s %10s %10s %10s\n", "S", "memcpy", "out-of-place",
              "in-place", "scratch", "oop/copy", "inpl/copy", "scr/copy");
  const size_t perPiece = o.pieceBytes / sizeof(float);
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    const size_t count = bytes / sizeof(float);
    auto pieces = [&](auto&& body) {
      for (size_t at = 0; at < count; at += perPiece) body(at, std::min(perPiece, count - at));
    };
    const double copy = medianMicros(o.reps, [&] { std::memcpy(copyOut, copyIn, 2 * bytes); });
    const double oop = medianMicros(o.reps, [&] {
      pieces([&](size_t at, size_t len) {
        sum(outA + at, inA + at, inB + at, len);
        weft::streamCopy(outB + at, outA + at, len * sizeof(float));
      });
    });
    const double inPlace = medianMicros(o.reps, [&] {
      pieces([&](size_t at, size_t len) {
        sum(inA + at, inA + at, inB + at, len);
        weft::streamCopy(inB + at, inA + at, len * sizeof(float));
      });
    });
    const double scratch = medianMicros(o.reps, [&] {
      pieces([&](size_t at, size_t len) {
        sum(piece.data(), inA + at, inB + at, len);
        weft::streamCopy(outA + at, piece.data(), len * sizeof(float));
        weft::streamCopy(outB + at, piece.data(), len * sizeof(float));
      });
    });
    std::printf("%12zu %10.1f %12.1f %10.1f %10.1f %10.2f %10.2f %10.2f\n", bytes, copy, oop,
                inPlace, scratch, oop / copy, inPlace / copy, scratch / copy);
    std::fflush(stdout);
  }
  return 0;
}
