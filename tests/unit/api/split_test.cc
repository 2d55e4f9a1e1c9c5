// weftCommSplit and weftCommShrink with ranks as threads.
#include <algorithm>
#include <numeric>

#include "unit/api/api_support.hpp"

using namespace weft::testing;

TEST_CASE("split by color orders ranks by key, leaves NOCOLOR out, and the children work") {
  const int n = 6;
  ThreadComms comms(n);
  std::vector<weftComm_t> children(n, nullptr);
  onEveryRank(n, [&](int r) {
    // Ranks 0..4: color parity; rank 5: no color. Keys reverse the order within a color.
    const int color = r == 5 ? WEFT_SPLIT_NOCOLOR : r % 2;
    const weftResult_t split = weftCommSplit(comms[r], color, -r, &children[r], nullptr);
    RANK_REQUIRE(split == weftSuccess);
    // The parent still works alongside its children.
    int32_t one = 1;
    const weftResult_t allReduce =
        weftAllReduce(&one, &one, 1, weftInt32, weftSum, comms[r], nullptr);
    RANK_REQUIRE(allReduce == weftSuccess);
    RANK_CHECK(one == n);
    if (r == 5) {
      RANK_CHECK(children[r] == nullptr);
      return;
    }
    RANK_REQUIRE(children[r] != nullptr);
    int size = 0, rank = -1;
    RANK_REQUIRE(weftCommCount(children[r], &size) == weftSuccess);
    RANK_REQUIRE(weftCommUserRank(children[r], &rank) == weftSuccess);
    // Evens {0,2,4} and odds {1,3}, each ranked by descending parent rank.
    std::vector<int> members;
    for (int q = n - 2; q >= 0; --q)
      if (q % 2 == r % 2) members.push_back(q);
    RANK_CHECK(size == static_cast<int>(members.size()));
    RANK_CHECK(rank ==
               static_cast<int>(std::find(members.begin(), members.end(), r) - members.begin()));
    std::vector<int32_t> x(10000, r);
    const weftResult_t childAllReduce =
        weftAllReduce(x.data(), x.data(), x.size(), weftInt32, weftSum, children[r], nullptr);
    RANK_REQUIRE(childAllReduce == weftSuccess);
    const int32_t want = std::accumulate(members.begin(), members.end(), 0);
    RANK_CHECK(x.front() == want);
    RANK_CHECK(x.back() == want);
    const weftResult_t destroy = weftCommDestroy(children[r]);
    RANK_REQUIRE(destroy == weftSuccess);
  });
}

namespace {

// `rounds` allreduces of 3000 int32 on `comm`, rank r contributing r + 1 + i % 5 at element i;
// "" when every result is right, else what went wrong. No Catch macros: runs on helper threads.
std::string sumRounds(weftComm_t comm, int rounds) {
  int size = 0, rank = -1;
  if (weftCommCount(comm, &size) != weftSuccess || weftCommUserRank(comm, &rank) != weftSuccess)
    return "cannot query the communicator";
  std::vector<int32_t> x(3000);
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = rank + 1 + static_cast<int32_t>(i % 5);
    if (weftAllReduce(x.data(), x.data(), x.size(), weftInt32, weftSum, comm, nullptr) !=
        weftSuccess)
      return "allreduce failed: " + lastError(comm);
    for (size_t i = 0; i < x.size(); ++i) {
      const int32_t want = size * (size + 1) / 2 + size * static_cast<int32_t>(i % 5);
      if (x[i] != want)
        return "round " + std::to_string(round) + ": element " + std::to_string(i) + " is " +
               std::to_string(x[i]) + ", expected " + std::to_string(want);
    }
  }
  return "";
}

// weftCommSplit with splitShare=1 in its config.
weftResult_t splitSharing(weftComm_t parent, int color, int key, weftComm_t* child) {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.splitShare = 1;
  return weftCommSplit(parent, color, key, child, &config);
}

}  // namespace

// splitShare=1: with WEFT_SHM_DISABLE=1 (ctest runs this case so too) the parent talks over
// UCX and its children share its worker, each as its own context (the test that runs it so
// checks the log for it). Parent, child and grandchild then run at once, each from its own
// thread, and the children outlive their parent.
TEST_CASE("splitShare=1 children run beside their parent from other threads and outlive it") {
  const int n = 5;
  ThreadComms comms(n);
  onEveryRank(n, [&](int r) {
    weftComm_t child = nullptr, grandchild = nullptr;
    const weftResult_t split = splitSharing(comms[r], r % 2, r, &child);
    RANK_REQUIRE(split == weftSuccess);
    int childRank = -1;
    RANK_REQUIRE(weftCommUserRank(child, &childRank) == weftSuccess);
    // The grandchild reverses the child's order and inherits its config (splitShare=1).
    const weftResult_t splitAgain = weftCommSplit(child, 0, -childRank, &grandchild, nullptr);
    RANK_REQUIRE(splitAgain == weftSuccess);
    std::string onParent, onChild;
    std::thread parentThread([&] { onParent = sumRounds(comms[r], 30); });
    std::thread childThread([&] { onChild = sumRounds(child, 30); });
    const std::string onGrandchild = sumRounds(grandchild, 30);
    parentThread.join();
    childThread.join();
    RANK_CHECK(onParent == "");
    RANK_CHECK(onChild == "");
    RANK_CHECK(onGrandchild == "");
    const weftResult_t destroyParent = weftCommDestroy(comms[r]);
    RANK_REQUIRE(destroyParent == weftSuccess);
    comms.forget(r);
    const std::string onGrandchildAlone = sumRounds(grandchild, 3);
    RANK_CHECK(onGrandchildAlone == "");
    const std::string onChildAlone = sumRounds(child, 3);
    RANK_CHECK(onChildAlone == "");
    const weftResult_t destroyGrandchild = weftCommDestroy(grandchild);
    RANK_REQUIRE(destroyGrandchild == weftSuccess);
    const weftResult_t destroyChild = weftCommDestroy(child);
    RANK_REQUIRE(destroyChild == weftSuccess);
  });
}

// An aborted child gives its context back and leaves the worker to its parent, which goes on
// working and can split again (the next child gets the next context id).
TEST_CASE("splitShare=1: aborting a child leaves its parent and later children working") {
  const int n = 4;
  ThreadComms comms(n);
  onEveryRank(n, [&](int r) {
    weftComm_t child = nullptr, again = nullptr;
    const weftResult_t split = splitSharing(comms[r], r % 2, r, &child);
    RANK_REQUIRE(split == weftSuccess);
    const std::string onChild = sumRounds(child, 2);
    RANK_CHECK(onChild == "");
    RANK_REQUIRE(weftCommAbort(child) == weftSuccess);
    const std::string onParent = sumRounds(comms[r], 3);
    RANK_CHECK(onParent == "");
    const weftResult_t splitAgain = splitSharing(comms[r], 0, -r, &again);
    RANK_REQUIRE(splitAgain == weftSuccess);
    const std::string onAgain = sumRounds(again, 3);
    RANK_CHECK(onAgain == "");
    const std::string onParentAgain = sumRounds(comms[r], 1);
    RANK_CHECK(onParentAgain == "");
    const weftResult_t destroy = weftCommDestroy(again);
    RANK_REQUIRE(destroy == weftSuccess);
  });
}

TEST_CASE("shrink leaves out the excluded ranks and the survivors carry on") {
  const int n = 4;
  ThreadComms comms(n);
  const int excluded = 2;
  std::vector<weftComm_t> children(n, nullptr);
  onEveryRank(n, [&](int r) {
    if (r == excluded) return;  // it does not take part (as if it had died)
    int list[] = {excluded};
    const weftResult_t shrink =
        weftCommShrink(comms[r], list, 1, &children[r], nullptr, WEFT_SHRINK_DEFAULT);
    RANK_REQUIRE(shrink == weftSuccess);
    int size = 0, rank = -1;
    RANK_REQUIRE(weftCommCount(children[r], &size) == weftSuccess);
    RANK_REQUIRE(weftCommUserRank(children[r], &rank) == weftSuccess);
    RANK_CHECK(size == 3);
    RANK_CHECK(rank == (r < excluded ? r : r - 1));
    std::vector<float> x(100000, float(r));
    const weftResult_t allReduce =
        weftAllReduce(x.data(), x.data(), x.size(), weftFloat, weftSum, children[r], nullptr);
    RANK_REQUIRE(allReduce == weftSuccess);
    RANK_CHECK(x.front() == 0.0f + 1 + 3);
    const weftResult_t destroy = weftCommDestroy(children[r]);
    RANK_REQUIRE(destroy == weftSuccess);
  });
  // The parent's ranks that shrank away from rank 2 can no longer agree with it: release it
  // locally (destroy would wait at a barrier for rank 2's peers).
  for (int r = 0; r < n; ++r) {
    REQUIRE(weftCommAbort(comms[r]) == weftSuccess);
    comms.forget(r);
  }
}

TEST_CASE("split and shrink reject bad arguments") {
  ThreadComms comms(2);
  weftComm_t child;
  CHECK(weftCommSplit(nullptr, 0, 0, &child, nullptr) == weftInvalidArgument);
  CHECK(weftCommSplit(comms[0], 0, 0, nullptr, nullptr) == weftInvalidArgument);
  CHECK(weftCommSplit(comms[0], -7, 0, &child, nullptr) == weftInvalidArgument);
  CHECK_THAT(lastError(nullptr), Catch::Contains("color=-7"));
  int self = 0, outside = 5;
  CHECK(weftCommShrink(comms[0], &outside, 1, &child, nullptr, 0) == weftInvalidArgument);
  CHECK_THAT(lastError(nullptr), Catch::Contains("holds 5"));
  CHECK(weftCommShrink(comms[0], &self, 1, &child, nullptr, 0) == weftInvalidUsage);
  CHECK(weftCommShrink(comms[0], nullptr, 1, &child, nullptr, 0) == weftInvalidArgument);
  CHECK(weftCommShrink(comms[0], nullptr, 0, &child, nullptr, 9) == weftInvalidArgument);
  CHECK_THAT(lastError(nullptr), Catch::Contains("shrinkFlags=9"));
}
