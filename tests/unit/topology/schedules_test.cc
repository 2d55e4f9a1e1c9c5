// Every schedule the topology chooses runs correctly over the loopback transport: the packed
// trees (broadcast, reduce, allreduce, allgather) and the best rings of every fixture allocation,
// and the placement-aware ring order of the two-package host for allreduce, allgather and
// reduce-scatter. Results are checked against sums computed here.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "algorithms/executor.hpp"
#include "algorithms/packed_trees.hpp"
#include "fixture.hpp"
#include "lib/topology/placement.hpp"
#include "lib/topology/plan.hpp"
#include "transports/loopback/loopback.hpp"

using namespace weft;
using namespace weft::topology;
using weft::testing::fixture;

namespace {

constexpr uint64_t kCount = 3001;  // not a multiple of anything: uneven blocks and splits

// Input of rank r, element e: small integers, so float sums are exact.
float input(int r, uint64_t e) {
  return static_cast<float>((r * 7 + e * 3) % 23);
}

uint64_t sendCount(Collective c, int n) {
  return c == Collective::ReduceScatter ? n * kCount : kCount;
}
uint64_t recvCount(Collective c, int n) {
  return c == Collective::AllGather ? n * kCount : kCount;
}

// Runs one schedule per rank (built by `build(shape)`) and returns every rank's receive buffer.
template <class Build>
std::vector<std::vector<float>> run(Collective c, int n, int root, Build build) {
  auto transports = createLoopbackTransports(n);
  std::vector<Schedule> schedules;
  std::vector<std::vector<float>> send(n), recv(n);
  std::vector<std::vector<uint8_t>> scratch(n);
  for (int r = 0; r < n; ++r) {
    CollectiveShape s;
    s.collective = c;
    s.nranks = n;
    s.rank = r;
    s.count = kCount;
    s.elemSize = sizeof(float);
    s.root = root;
    s.chunkBytes = 1024;  // several chunks per part: the pipelines are exercised
    schedules.push_back(build(s));
    send[r].resize(sendCount(c, n));
    for (uint64_t e = 0; e < send[r].size(); ++e) send[r][e] = input(r, e);
    recv[r].assign(recvCount(c, n), -1.0f);
    scratch[r].resize(schedules[r].scratchBytes + 1);
  }
  std::vector<std::unique_ptr<Execution>> executions;
  std::vector<Execution*> all;
  for (int r = 0; r < n; ++r) {
    Work w;
    w.schedule = &schedules[r];
    w.buffers = {send[r].data(), recv[r].data(), scratch[r].data()};
    w.reduce = reduceKernel(weftFloat32, ReduceKind::Sum);
    w.elemSize = sizeof(float);
    ExecutionContext context;
    context.rank = r;
    context.deadline = Deadline::afterMs(60000);
    context.timeoutMs = 60000;
    executions.push_back(
        std::make_unique<Execution>(*transports[r], std::vector<Work>{w}, context));
    all.push_back(executions.back().get());
  }
  runToCompletion(all);
  return recv;
}

void checkAllReduce(const std::vector<std::vector<float>>& out, int n) {
  for (int r = 0; r < n; ++r)
    for (uint64_t e = 0; e < kCount; ++e) {
      float sum = 0;
      for (int q = 0; q < n; ++q) sum += input(q, e);
      if (out[r][e] != sum)
        FAIL("rank " << r << " element " << e << ": " << out[r][e] << " != " << sum);
    }
}

void checkReduce(const std::vector<std::vector<float>>& out, int n, int root) {
  for (uint64_t e = 0; e < kCount; ++e) {
    float sum = 0;
    for (int q = 0; q < n; ++q) sum += input(q, e);
    if (out[root][e] != sum) FAIL("root element " << e << ": " << out[root][e] << " != " << sum);
  }
}

void checkAllGather(const std::vector<std::vector<float>>& out, int n) {
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      for (uint64_t e = 0; e < kCount; ++e)
        if (out[r][q * kCount + e] != input(q, e))
          FAIL("allgather rank " << r << " block " << q << " element " << e);
}

void checkBroadcast(const std::vector<std::vector<float>>& out, int n, int root) {
  for (int r = 0; r < n; ++r)
    for (uint64_t e = 0; e < kCount; ++e)
      if (out[r][e] != input(root, e))
        FAIL("rank " << r << " element " << e << ": " << out[r][e] << " != " << input(root, e));
}

}  // namespace

TEST_CASE("the chosen trees and rings of every fixture allocation run correctly on loopback") {
  struct Alloc {
    const char* fixture;
    std::vector<int> cuda;
  };
  const Alloc allocs[] = {{"dgx1-v100.xml", {}},
                          {"dgx1-v100.xml", {0, 1, 4}},
                          {"dgx1-v100.xml", {0, 1, 2, 4, 5}},
                          {"dgx1-v100.xml", {0, 1, 2, 4, 5, 6}},
                          {"dgx1-v100.xml", {0, 1, 2, 3, 4, 5, 6}},
                          {"nvswitch-a100.xml", {}},
                          {"pcie-8gpu.xml", {}}};
  for (const Alloc& a : allocs) {
    const Graph& g = fixture(a.fixture);
    const std::vector<int> gpus = gpusByIndex(g, a.cuda);
    const int n = static_cast<int>(gpus.size());
    const int root = n - 1;  // not rank 0, to catch root mix-ups
    const GpuPlan plan = planGpus(g, gpus, root);
    INFO(a.fixture << " with " << n << " GPUs");
    {
      INFO("packed broadcast from " << root << ", " << plan.broadcast.packed.trees.size()
                                    << " trees");
      checkBroadcast(run(Collective::Broadcast, n, root,
                         [&](const CollectiveShape& s) {
                           return buildPackedTrees(s, plan.broadcast.packed.trees);
                         }),
                     n, root);
    }
    {
      INFO("ring broadcast (a chain along the best ring from the root)");
      WeightedTree chain{std::vector<int>(n, -1), 1};
      const std::vector<int>& order = plan.broadcast.ring.order;
      REQUIRE(order[0] == root);
      for (int i = 1; i < n; ++i) chain.parent[order[i]] = order[i - 1];
      checkBroadcast(run(Collective::Broadcast, n, root,
                         [&](const CollectiveShape& s) {
                           return buildPackedTrees(s, std::vector<WeightedTree>{chain});
                         }),
                     n, root);
    }
    {
      INFO("packed reduce to " << root << ", " << plan.reduce.packed.trees.size() << " trees");
      checkReduce(run(Collective::Reduce, n, root,
                      [&](const CollectiveShape& s) {
                        return buildPackedTrees(s, plan.reduce.packed.trees);
                      }),
                  n, root);
    }
    {
      INFO("ring reduce (a chain along the best ring into the root)");
      WeightedTree chain{std::vector<int>(n, -1), 1};
      const std::vector<int>& order = plan.reduce.ring.order;
      REQUIRE(order[0] == root);
      for (int i = 1; i < n; ++i) chain.parent[order[i]] = order[(i + 1) % n];
      checkReduce(run(Collective::Reduce, n, root,
                      [&](const CollectiveShape& s) {
                        return buildPackedTrees(s, std::vector<WeightedTree>{chain});
                      }),
                  n, root);
    }
    {
      INFO("packed allreduce, " << plan.allreduce.packed.trees.size() << " trees");
      checkAllReduce(run(Collective::AllReduce, n, 0,
                         [&](const CollectiveShape& s) {
                           return buildPackedTrees(s, plan.allreduce.packed.trees);
                         }),
                     n);
    }
    {
      INFO("packed allgather, " << plan.allgather.packed.trees.size() << " trees");
      checkAllGather(run(Collective::AllGather, n, 0,
                         [&](const CollectiveShape& s) {
                           return buildPackedTrees(s, plan.allgather.packed.trees);
                         }),
                     n);
    }
    {
      INFO("ring allgather in the best ring's order");
      checkAllGather(run(Collective::AllGather, n, 0,
                         [&](const CollectiveShape& s) {
                           CollectiveShape t = s;
                           t.ringOrder = plan.allgather.ring.order;
                           return buildRing(t);
                         }),
                     n);
    }
    {
      INFO("ring allreduce in the best ring's order");
      checkAllReduce(run(Collective::AllReduce, n, 0,
                         [&](const CollectiveShape& s) {
                           CollectiveShape t = s;
                           t.ringOrder = plan.allreduce.ring.order;
                           return buildRing(t);
                         }),
                     n);
    }
  }
}

TEST_CASE(
    "rings in the two-package placement order compute allreduce, allgather and reduce-scatter") {
  const Graph& g = fixture("two-package.xml");
  for (int n : {3, 16}) {
    const std::vector<int> order = ringOrder(placeRanks(g, n, MapBy::Package));
    auto ring = [&](const CollectiveShape& s) {
      CollectiveShape t = s;
      t.ringOrder = order;
      return buildRing(t);
    };
    INFO(n << " ranks");
    checkAllReduce(run(Collective::AllReduce, n, 0, ring), n);
    checkAllGather(run(Collective::AllGather, n, 0, ring), n);
    const auto scattered = run(Collective::ReduceScatter, n, 0, ring);
    for (int r = 0; r < n; ++r)
      for (uint64_t e = 0; e < kCount; ++e) {
        float sum = 0;
        for (int q = 0; q < n; ++q) sum += input(q, r * kCount + e);
        if (scattered[r][e] != sum) FAIL("reduce-scatter rank " << r << " element " << e);
      }
  }
}

TEST_CASE("malformed packed trees are internal errors, not crashes") {
  CollectiveShape s;
  s.collective = Collective::Broadcast;
  s.nranks = 3;
  s.count = 10;
  s.elemSize = 4;
  CHECK_THROWS_WITH(buildPackedTrees(s, std::vector<WeightedTree>{{{-1, 0}, 1}}),
                    Catch::Contains("2 ranks for 3"));
  CHECK_THROWS_WITH(buildPackedTrees(s, std::vector<WeightedTree>{{{-1, 2, 1}, 1}}),
                    Catch::Contains("cycle"));
  CHECK_THROWS_WITH(buildPackedTrees(s, std::vector<WeightedTree>{{{1, -1, 1}, 1}}),
                    Catch::Contains("rooted at 1"));
  CHECK_THROWS_WITH(buildPackedTrees(s, std::vector<WeightedTree>{{{-1, -1, 0}, 1}}),
                    Catch::Contains("two roots"));
}
