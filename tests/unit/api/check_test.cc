// WEFT_CHECK=1 (ctest sets it for this program's "check:" cases): mismatched collectives fail
// with weftInvalidUsage naming the ranks and what each called, instead of hanging.
#include "unit/api/api_support.hpp"

using namespace weft::testing;

TEST_CASE("check: matching collectives run as usual") {
  ThreadComms comms(3);
  onEveryRank(3, [&](int r) {
    std::vector<float> x(1000, 1.0f);
    for (int i = 0; i < 3; ++i) {
      const weftResult_t allReduce =
          weftAllReduce(x.data(), x.data(), x.size(), weftFloat, weftSum, comms[r], nullptr);
      RANK_REQUIRE(allReduce == weftSuccess);
    }
    RANK_CHECK(x[0] == 27.0f);
  });
}

TEST_CASE("check: allreduce on one rank and broadcast on another is refused with both named") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  std::vector<weftComm_t> comms(2);
  std::vector<std::string> errors(2);
  onEveryRank(2, [&](int r) {
    weftConfig_t config = WEFT_CONFIG_INITIALIZER;
    config.timeoutMs = 60000;
    const weftResult_t init = weftCommInitRankConfig(&comms[r], 2, id, r, &config);
    RANK_REQUIRE(init == weftSuccess);
    std::vector<float> x(1000, 1.0f);
    const weftResult_t result =
        r == 0 ? weftAllReduce(x.data(), x.data(), x.size(), weftFloat, weftSum, comms[r], nullptr)
               : weftBroadcast(x.data(), x.data(), x.size(), weftFloat, 0, comms[r], nullptr);
    RANK_CHECK(result == weftInvalidUsage);
    errors[r] = lastError(comms[r]);
    RANK_CHECK(weftCommAbort(comms[r]) == weftSuccess);
  });
  for (const std::string& e : errors) {
    CHECK_THAT(e, Catch::Contains("WEFT_CHECK"));
    CHECK_THAT(e, Catch::Contains("rank 0 called AllReduce(count=1000, float, sum) #0"));
    CHECK_THAT(e, Catch::Contains("rank 1 called Broadcast(count=1000, float, root=0) #0"));
  }
}

TEST_CASE("check: different counts are refused") {
  ThreadComms comms(3);
  onEveryRank(3, [&](int r) {
    std::vector<int32_t> x(100, 1);
    const size_t count = r == 2 ? 99 : 100;
    const weftResult_t allReduce =
        weftAllReduce(x.data(), x.data(), count, weftInt32, weftSum, comms[r], nullptr);
    RANK_CHECK(allReduce == weftInvalidUsage);
    RANK_CHECK_THAT(lastError(comms[r]), Catch::Contains("ranks 0, 1 called AllReduce(count=100"));
    RANK_CHECK_THAT(lastError(comms[r]), Catch::Contains("rank 2 called AllReduce(count=99"));
  });
  for (int r = 0; r < 3; ++r) {
    CHECK(weftCommAbort(comms[r]) == weftSuccess);
    comms.forget(r);
  }
}
