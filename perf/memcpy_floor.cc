// memcpy-floor: the concurrent-memcpy floor of a collective on one host (issue 3). N processes,
// released together, each copy S bytes between two buffers of their own, repeatedly. No
// collective can beat it: every rank must at least read S bytes of input and write S bytes of
// output, and here they do nothing else, with no synchronisation between them.
//
//   memcpy-floor -n procs [-b min] [-e max] [-f factor] [-r reps] [-w warmup] [-t ms]
//
// Per size and repetition: every process waits at a barrier in shared memory, takes the start
// time, does `iters` copies, takes the end time. The repetition's time per copy is
// (latest end - earliest start) / iters: the slowest process measured from the common release,
// so that processes descheduled for a while (more processes than cores) count as they would in a
// collective. Printed per size: the median over the repetitions, in microseconds. `iters` is
// chosen per size so that one repetition copies about -t milliseconds' worth at ~10 GB/s.
//
// Output: "# ..." comment lines, then "size_bytes time_us" per size (rank-count independent
// format, the same as mpi-collective-perf's). Exit status 0, 1 when a process failed, 2 on a bad
// command line.
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct Options {
  int procs = 2;
  size_t minBytes = 8;
  size_t maxBytes = size_t{32} << 20;
  size_t factor = 2;
  int reps = 5;
  int warmup = 1;
  double targetMs = 4;
};

constexpr int kMaxProcs = 64;
constexpr size_t kMaxSizes = 64;
constexpr int kMaxReps = 100;

// Lives in a MAP_SHARED mapping created before fork(). Each field on its own cache line.
struct alignas(64) Line {
  std::atomic<uint64_t> value{0};
};
struct Shared {
  Line arrived;     // processes that reached the current barrier
  Line generation;  // barrier generation, bumped by the last arrival
  Line failed;
  // start/end in ns per (size index, repetition, process): written by one process each.
  int64_t start[kMaxSizes][kMaxReps][kMaxProcs];
  int64_t end[kMaxSizes][kMaxReps][kMaxProcs];
};

int64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // one clock for all processes
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Sense-reversing barrier. Spins briefly, then yields: with more processes than cores a pure
// spin would starve the processes that have not arrived yet.
void barrier(Shared& s, int procs) {
  const uint64_t gen = s.generation.value.load(std::memory_order_acquire);
  if (s.arrived.value.fetch_add(1, std::memory_order_acq_rel) + 1 == uint64_t(procs)) {
    s.arrived.value.store(0, std::memory_order_relaxed);
    s.generation.value.store(gen + 1, std::memory_order_release);
    return;
  }
  for (int spin = 0; s.generation.value.load(std::memory_order_acquire) == gen; ++spin) {
    if (spin > 1000) sched_yield();
  }
}

size_t parseSize(const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  switch (end && *end ? *end : 0) {
    case 'K':
    case 'k': v *= 1024.0; break;
    case 'M':
    case 'm': v *= 1024.0 * 1024.0; break;
    case 'G':
    case 'g': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
  }
  return static_cast<size_t>(v);
}

int usage(const char* why) {
  std::fprintf(stderr,
               "memcpy-floor: %s\nusage: memcpy-floor -n procs [-b min] [-e max] [-f factor] "
               "[-r reps] [-w warmup] [-t ms-per-rep]\n",
               why);
  return 2;
}

size_t itersFor(const Options& o, size_t bytes) {
  const double bytesPerMs = 10e9 / 1e3;  // a DRAM-speed guess: only sets the repetition length
  const double n = o.targetMs * bytesPerMs / static_cast<double>(std::max<size_t>(bytes, 64));
  return static_cast<size_t>(std::clamp(n, 1.0, 100000.0));
}

// One process: private buffers (allocated after fork, touched before timing), every size.
void runChild(const Options& o, const std::vector<size_t>& sizes, Shared& s, int me) {
  const size_t maxBytes = std::max<size_t>(sizes.back(), 1);
  auto* a = static_cast<unsigned char*>(std::malloc(maxBytes));
  auto* b = static_cast<unsigned char*>(std::malloc(maxBytes));
  if (!a || !b) {
    s.failed.value.store(1);
    std::fprintf(stderr, "memcpy-floor: process %d: out of memory\n", me);
  } else {
    std::memset(a, me + 1, maxBytes);
    std::memset(b, 0, maxBytes);
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    const size_t bytes = sizes[k];
    const size_t iters = itersFor(o, bytes);
    for (int rep = -o.warmup; rep < o.reps; ++rep) {
      barrier(s, o.procs);
      const int64_t t0 = nowNs();
      if (a && b) {
        for (size_t i = 0; i < iters; ++i) {
          std::memcpy(b, a, bytes);
          // Keeps the compiler from merging or dropping copies.
          asm volatile("" : : "r"(b) : "memory");
        }
      }
      const int64_t t1 = nowNs();
      if (rep >= 0) {
        s.start[k][rep][me] = t0;
        s.end[k][rep][me] = t1;
      }
    }
  }
  std::free(a);
  std::free(b);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage("a flag lacks its value");
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "-n")
      o.procs = std::atoi(v);
    else if (flag == "-b")
      o.minBytes = parseSize(v);
    else if (flag == "-e")
      o.maxBytes = parseSize(v);
    else if (flag == "-f")
      o.factor = static_cast<size_t>(std::atoi(v));
    else if (flag == "-r")
      o.reps = std::atoi(v);
    else if (flag == "-w")
      o.warmup = std::atoi(v);
    else if (flag == "-t")
      o.targetMs = std::atof(v);
    else
      return usage(("unknown flag " + flag).c_str());
  }
  if (o.procs < 1 || o.procs > kMaxProcs) return usage("-n must be 1..64");
  if (o.reps < 1 || o.reps > kMaxReps || o.warmup < 0) return usage("-r must be 1..100");
  if (o.minBytes > o.maxBytes || o.factor < 1 || o.targetMs <= 0) return usage("bad sizes");
  std::vector<size_t> sizes;
  for (size_t s = o.minBytes; s <= o.maxBytes && sizes.size() < kMaxSizes; s *= o.factor) {
    sizes.push_back(s);
    if (o.factor < 2) break;
  }

  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("memcpy-floor: mmap");
    return 1;
  }
  auto* shared = new (mem) Shared;

  std::vector<pid_t> children;
  for (int p = 0; p < o.procs; ++p) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("memcpy-floor: fork");
      for (pid_t c : children) kill(c, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      runChild(o, sizes, *shared, p);
      _exit(0);
    }
    children.push_back(pid);
  }
  int status = 0;
  for (pid_t c : children) {
    int ws = 0;
    while (waitpid(c, &ws, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) status = 1;
  }
  if (shared->failed.value.load() != 0) status = 1;

  std::printf(
      "# memcpy-floor: %d processes each copy S bytes between two private buffers at "
      "once; median over %d repetitions of (latest end - earliest start) / copies\n",
      o.procs, o.reps);
  std::printf("# size_bytes time_us\n");
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<double> perCopy;
    for (int rep = 0; rep < o.reps; ++rep) {
      int64_t first = INT64_MAX, last = INT64_MIN;
      for (int p = 0; p < o.procs; ++p) {
        first = std::min(first, shared->start[k][rep][p]);
        last = std::max(last, shared->end[k][rep][p]);
      }
      perCopy.push_back(static_cast<double>(last - first) / 1e3 /
                        static_cast<double>(itersFor(o, sizes[k])));
    }
    std::sort(perCopy.begin(), perCopy.end());
    const size_t n = perCopy.size();
    const double median = n % 2 ? perCopy[n / 2] : (perCopy[n / 2 - 1] + perCopy[n / 2]) / 2;
    std::printf("%zu %.3f\n", sizes[k], median);
  }
  return status;
}
