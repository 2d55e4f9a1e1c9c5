// The local ranks decide together whether they share cores, from the union of their CPU affinity
// masks: ranks bound to a core each (mpirun's default for two ranks) do not, ranks bound to the
// same core do, and every rank reaches the same answer whatever its own mask. Ranks are threads,
// each setting its own mask before the set-up; the expected answers are counted here from the
// masks the test chose.
#include <pthread.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <vector>

#include "algorithms/shm/shm_collectives.hpp"
#include "lib/base/cpus.hpp"
#include "support/thread_oob.hpp"
#include "transports/shm/segment.hpp"

using namespace weft;
using namespace weft::test;

namespace {

struct Agreed {
  int cores = -1;
  bool oversubscribed = false;
};

// Runs ShmCollectives::setUp on one thread per entry of `cpus`, each bound to the CPUs listed
// for it, and returns what each rank concluded.
std::vector<Agreed> agree(const std::vector<std::vector<int>>& cpus, ShmMode mode) {
  const int n = static_cast<int>(cpus.size());
  std::vector<Agreed> seen(cpus.size());
  ThreadOobGroup oob(n);
  static int serial = 0;
  const std::string name = "coreagree" + std::to_string(getpid()) + "x" + std::to_string(++serial);
  const std::vector<std::string> errors = runRanks(oob, [&](int r, OutOfBand& o) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    for (int c : cpus[r]) CPU_SET(c, &mask);
    if (pthread_setaffinity_np(pthread_self(), sizeof mask, &mask) != 0)
      throw std::runtime_error("pthread_setaffinity_np failed");
    LocalGroup group;
    for (int q = 0; q < n; ++q) group.ranks.push_back(q);
    group.me = r;
    group.oneProcess = true;
    group.pids.assign(static_cast<size_t>(n), getpid());
    auto segment = ShmSegment::create(o, group, name, SegmentGeometry::make(n, 4096, 4096),
                                      Deadline::afterMs(120000));
    ShmCollectives shm(*segment, group, mode);
    WaitContext wait;
    wait.timeoutMs = 120000;
    wait.prefix = "core agreement";
    shm.setUp(wait);
    seen[r] = {shm.cores(), shm.oversubscribed()};
  });
  std::string failures;
  for (const std::string& e : errors) failures += e.empty() ? "" : e + "\n";
  INFO(failures);
  REQUIRE(failures.empty());
  return seen;
}

}  // namespace

TEST_CASE("local ranks agree on sharing cores from the union of their affinity masks") {
  const std::vector<int> cpus = weft::allowedCpus();
  if (cpus.size() < 2) {
    WARN("SKIPPED: this process may run on " << cpus.size() << " CPU(s); the test needs 2");
    return;
  }
  const int a = cpus[0], b = cpus[1];
  for (ShmMode mode : {ShmMode::Auto, ShmMode::Staged}) {
    CAPTURE(static_cast<int>(mode));
    // A core each: 2 CPUs in all, 2 ranks, nobody shares.
    for (const Agreed& s : agree({{a}, {b}}, mode)) {
      CHECK(s.cores == 2);
      CHECK_FALSE(s.oversubscribed);
    }
    // Both on one core.
    for (const Agreed& s : agree({{a}, {a}}, mode)) {
      CHECK(s.cores == 1);
      CHECK(s.oversubscribed);
    }
    // Different masks, one answer: rank 0 may run on both CPUs, ranks 1 and 2 on one each;
    // 3 ranks on 2 CPUs share, as every rank must conclude, rank 0 included.
    for (const Agreed& s : agree({{a, b}, {a}, {b}}, mode)) {
      CHECK(s.cores == 2);
      CHECK(s.oversubscribed);
    }
  }
}
