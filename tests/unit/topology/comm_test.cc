// The communicator decides from the merged picture: with WEFT_TOPO_SYNTHETIC describing two
// packages of one CPU each (CPU 0 in package 0, CPU 1 in package 1) and rank r's thread bound
// to CPU r % 2, the ring visits ranks 0 2 1 3 (each package's ranks together), ring collectives
// (WEFT_ALGO=ring) in that order compute the right sums, and rank 0 wrote the picture to
// WEFT_TOPO_DUMP_FILE. (The variables are set before the first weft call, which parses them.)
#include "lib/comm/comm.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "include/weft.h"
#include "lib/api/handles.hpp"

TEST_CASE("ranks bound across two packages form a ring that crosses packages twice") {
  const std::string dumpFile = "/tmp/weft-topo-dump-" + std::to_string(getpid()) + ".json";
  setenv("WEFT_TOPO_SYNTHETIC", "pack:2 core:1 pu:1", 1);
  setenv("WEFT_ALGO", "ring", 1);
  setenv("WEFT_TOPO_DUMP_FILE", dumpFile.c_str(), 1);
  setenv("WEFT_TIMEOUT_MS", "120000", 1);
  constexpr int n = 4;
  constexpr size_t c = 999;
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  std::vector<std::vector<int>> orders(n);
  std::vector<int> failures(n, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(r % 2, &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        failures[r] = 1;
        return;
      }
      weftComm_t comm = nullptr;
      if (weftCommInitRank(&comm, n, id, r) != weftSuccess) {
        failures[r] = 2;
        return;
      }
      const std::span<const int> order = weft::api::readyComm(comm)->ringOrder();
      orders[r].assign(order.begin(), order.end());
      std::vector<float> in(n * c), out(n * c);
      for (size_t i = 0; i < in.size(); ++i) in[i] = float(r * 10 + i % 7);
      if (weftAllReduce(in.data(), out.data(), c, weftFloat, weftSum, comm, nullptr) != weftSuccess)
        failures[r] = 3;
      for (size_t i = 0; i < c && !failures[r]; ++i)
        if (out[i] != float(0 + 10 + 20 + 30 + 4 * (i % 7))) failures[r] = 4;
      if (weftAllGather(in.data(), out.data(), c, weftFloat, comm, nullptr) != weftSuccess)
        failures[r] = 5;
      for (int q = 0; q < n && !failures[r]; ++q)
        for (size_t i = 0; i < c; ++i)
          if (out[q * c + i] != float(q * 10 + i % 7)) failures[r] = 6;
      if (weftReduceScatter(in.data(), out.data(), c, weftFloat, weftSum, comm, nullptr) !=
          weftSuccess)
        failures[r] = 7;
      for (size_t i = 0; i < c && !failures[r]; ++i)
        if (out[i] != float(60 + 4 * ((r * c + i) % 7))) failures[r] = 8;
      if (weftCommDestroy(comm) != weftSuccess) failures[r] = 9;
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << " failure " << failures[r] << " " << weftGetLastError(nullptr));
    CHECK(failures[r] == 0);
    CHECK(orders[r] == std::vector<int>{0, 2, 1, 3});
  }
  std::ifstream dump(dumpFile);
  REQUIRE(dump.good());
  std::stringstream text;
  text << dump.rdbuf();
  std::remove(dumpFile.c_str());
  CHECK_THAT(text.str(), Catch::Contains("\"ring\": [0, 2, 1, 3]"));
  CHECK_THAT(text.str(), Catch::Contains("\"kind\": \"package\""));
}
