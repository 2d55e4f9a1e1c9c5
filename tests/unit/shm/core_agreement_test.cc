// The local ranks decide together whether they share cores, from the union of their CPU affinity
// masks: ranks bound to a core each (mpirun's default for two ranks) do not, ranks bound to the
// same core do, and every rank reaches the same answer whatever its own mask. Ranks are threads,
// each setting its own mask before the exchange; the expected answers are counted here from the
// masks the test chose. Then the slot size that follows from the answer.
#include "transports/shm/core_agreement.hpp"

#include <hwloc.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "lib/base/cpus.hpp"
#include "support/thread_oob.hpp"
#include "transports/shm/segment.hpp"

using namespace weft;
using namespace weft::test;

namespace {

// Runs agreeOnCores on one thread per entry of `cpus`, each bound to the CPUs listed for it,
// and returns what each rank concluded. `local` lists the ranks on this host (the others
// contribute their masks to the exchange but are not counted); `given`, where not empty, the
// WEFT_SHM_CORES each rank passes (0: none).
std::vector<CoreAgreement> agree(const std::vector<std::vector<int>>& cpus,
                                 std::vector<int> local = {}, std::vector<int> given = {}) {
  const int n = static_cast<int>(cpus.size());
  if (local.empty())
    for (int q = 0; q < n; ++q) local.push_back(q);
  std::vector<CoreAgreement> seen(cpus.size());
  ThreadOobGroup oob(n);
  const std::vector<std::string> errors = runRanks(oob, [&](int r, OutOfBand& o) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    for (int c : cpus[r]) CPU_SET(c, &mask);
    if (pthread_setaffinity_np(pthread_self(), sizeof mask, &mask) != 0)
      throw std::runtime_error("pthread_setaffinity_np failed");
    LocalGroup group;
    group.ranks = local;
    group.me = static_cast<int>(std::find(local.begin(), local.end(), r) - local.begin());
    group.oneProcess = true;
    group.pids.assign(local.size(), getpid());
    const int mine = given.empty() ? 0 : given[r];
    seen[r] = agreeOnCores(o, group, mine, Deadline::afterMs(120000));
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
  // A core each: 2 CPUs in all, 2 ranks, nobody shares.
  for (const CoreAgreement& s : agree({{a}, {b}})) {
    CHECK(s.cores == 2);
    CHECK_FALSE(s.oversubscribed);
  }
  // Both on one core.
  for (const CoreAgreement& s : agree({{a}, {a}})) {
    CHECK(s.cores == 1);
    CHECK(s.oversubscribed);
  }
  // Different masks, one answer: rank 0 may run on both CPUs, ranks 1 and 2 on one each;
  // 3 ranks on 2 CPUs share, as every rank must conclude, rank 0 included.
  for (const CoreAgreement& s : agree({{a, b}, {a}, {b}})) {
    CHECK(s.cores == 2);
    CHECK(s.oversubscribed);
  }
  // Only the local ranks' masks count: ranks 0 and 2 share core a; rank 1, elsewhere, runs on b.
  const std::vector<CoreAgreement> seen = agree({{a}, {b}, {a}}, {0, 2});
  for (int r : {0, 2}) {
    CHECK(seen[r].cores == 1);
    CHECK(seen[r].oversubscribed);
  }
}

TEST_CASE(
    "a number of cores given by some local ranks replaces the masks on all, the smallest "
    "where they differ") {
  const std::vector<int> cpus = weft::allowedCpus();
  const int a = cpus[0];
  // Three ranks on one CPU, told there are 8: none shares.
  for (const CoreAgreement& s : agree({{a}, {a}, {a}}, {}, {8, 8, 8})) {
    CHECK(s.cores == 8);
    CHECK_FALSE(s.oversubscribed);
  }
  // Only rank 1 says so, and it says 2: 3 ranks on 2 cores share, on every rank.
  for (const CoreAgreement& s : agree({{a}, {a}, {a}}, {}, {0, 2, 0})) {
    CHECK(s.cores == 2);
    CHECK(s.oversubscribed);
  }
  // Different numbers: the smallest, 3, so 3 ranks do not share.
  for (const CoreAgreement& s : agree({{a}, {a}, {a}}, {}, {16, 3, 0})) {
    CHECK(s.cores == 3);
    CHECK_FALSE(s.oversubscribed);
  }
  // A number from a rank on another host does not count: ranks 0 and 2 are local.
  const std::vector<CoreAgreement> seen = agree({{a}, {a}, {a}}, {0, 2}, {0, 8, 0});
  for (int r : {0, 2}) {
    CHECK(seen[r].cores == 1);
    CHECK(seen[r].oversubscribed);
  }
}

TEST_CASE("ranks that share cores get larger slots: 8 MiB in all, at most 1 MiB each") {
  for (int n = 1; n <= 16; ++n) {
    CAPTURE(n);
    const uint64_t cacheSized = defaultSlotBytes(n, false);
    CHECK(cacheSized >= (32u << 10));
    CHECK(cacheSized <= (1u << 20));
    const uint64_t shared = defaultSlotBytes(n, true);
    CHECK(shared >= cacheSized);
    CHECK(shared <= (1u << 20));
    // Either one of the bounds, or 8 MiB of slots in all (up to the division's remainder).
    const bool bound = shared == cacheSized || shared == (1u << 20);
    const uint64_t all = uint64_t(n) * 2 * shared, target = uint64_t{8} << 20;
    CHECK((bound || (all <= target && all + 2 * n > target)));
  }
  // (No cache of 8 MiB per core is in sight: 16 ranks get 256 KiB, 4 or fewer the most.)
  CHECK(defaultSlotBytes(16, true) == (256u << 10));
  CHECK(defaultSlotBytes(4, true) == (1u << 20));
  CHECK(defaultSlotBytes(2, true) == (1u << 20));
}

TEST_CASE("ranks with a core each get slots that together take four times the L2 cache") {
  // The L2 size as hwloc reports it, read here the plain way (1 MiB where it reports none).
  uint64_t l2 = 0;
  hwloc_topology_t topology;
  REQUIRE(hwloc_topology_init(&topology) == 0);
  if (hwloc_topology_load(topology) == 0) {
    hwloc_obj_t cache = hwloc_get_obj_by_type(topology, HWLOC_OBJ_L2CACHE, 0);
    if (cache && cache->attr) l2 = cache->attr->cache.size;
  }
  hwloc_topology_destroy(topology);
  if (l2 == 0) l2 = 1 << 20;
  CAPTURE(l2);
  for (int n = 1; n <= 64; ++n) {
    CAPTURE(n);
    const uint64_t slot = defaultSlotBytes(n, false);
    const uint64_t all = uint64_t(n) * 2 * slot;
    if (slot == (32u << 10))
      CHECK(all >= 4 * l2 - 2 * n);  // the lower bound: 4 L2 would give smaller slots
    else if (slot == (1u << 20))
      CHECK(all <= 4 * l2);  // the upper bound: 4 L2 would give larger ones
    else
      CHECK((all <= 4 * l2 && all + 2 * n > 4 * l2));
  }
}
