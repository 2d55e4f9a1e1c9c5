// Every API function given bad arguments returns the right weftResult_t, and
// weftGetLastError names the argument. Nothing crashes, nothing hangs.
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "unit/api/api_support.hpp"

using weft::testing::lastError;
using weft::testing::onEveryRank;
using weft::testing::ThreadComms;

namespace {

struct Row {
  const char* what;
  std::function<weftResult_t()> call;
  weftResult_t expected;
  const char* messageContains;
};

void checkRows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    INFO(row.what);
    const weftResult_t got = row.call();
    CHECK(got == row.expected);
    CHECK_THAT(lastError(nullptr), Catch::Contains(row.messageContains));
  }
}

// A one-rank communicator: enough for every argument check.
weftComm_t soloComm() {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  weftComm_t comm = nullptr;
  REQUIRE(weftCommInitRank(&comm, 1, id, 0) == weftSuccess);
  return comm;
}

}  // namespace

TEST_CASE("version, error strings and unique ids reject bad arguments") {
  int version = 0;
  REQUIRE(weftGetVersion(&version) == weftSuccess);
  CHECK(version == WEFT_VERSION_CODE);
  for (int r = 0; r <= weftNumResults; ++r)
    CHECK(weftGetErrorString(static_cast<weftResult_t>(r)) != nullptr);
  CHECK(weftGetLastError(nullptr) != nullptr);
  checkRows({
      {"weftGetVersion(NULL)", [] { return weftGetVersion(nullptr); }, weftInvalidArgument,
       "version"},
      {"weftGetUniqueId(NULL)", [] { return weftGetUniqueId(nullptr); }, weftInvalidArgument,
       "uniqueId"},
  });
}

TEST_CASE("communicator creation rejects bad arguments and garbage ids") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  weftUniqueId garbage{};
  for (int i = 0; i < WEFT_UNIQUE_ID_BYTES; ++i) garbage.internal[i] = static_cast<char>(i * 7);
  weftComm_t comm = nullptr;
  weftConfig_t uninitialised{};
  auto withConfig = [&](std::function<void(weftConfig_t&)> edit) {
    return [&, edit] {
      weftConfig_t config = WEFT_CONFIG_INITIALIZER;
      edit(config);
      return weftCommInitRankConfig(&comm, 1, id, 0, &config);
    };
  };
  int devices[2] = {0, 1};
  checkRows({
      {"comm NULL", [&] { return weftCommInitRank(nullptr, 2, id, 0); }, weftInvalidArgument,
       "comm"},
      {"nranks 0", [&] { return weftCommInitRank(&comm, 0, id, 0); }, weftInvalidArgument,
       "nranks=0"},
      {"nranks -3", [&] { return weftCommInitRank(&comm, -3, id, 0); }, weftInvalidArgument,
       "nranks=-3"},
      {"rank -1", [&] { return weftCommInitRank(&comm, 2, id, -1); }, weftInvalidArgument,
       "rank=-1"},
      {"rank == nranks", [&] { return weftCommInitRank(&comm, 2, id, 2); },
       weftInvalidArgument, "rank=2"},
      {"garbage unique id", [&] { return weftCommInitRank(&comm, 1, garbage, 0); },
       weftInvalidArgument, "unique id"},
      {"config not initialised",
       [&] { return weftCommInitRankConfig(&comm, 1, id, 0, &uninitialised); },
       weftInvalidArgument, "WEFT_CONFIG_INITIALIZER"},
      {"config.blocking 2", withConfig([](weftConfig_t& c) { c.blocking = 2; }),
       weftInvalidArgument, "blocking"},
      {"config.timeoutMs -5", withConfig([](weftConfig_t& c) { c.timeoutMs = -5; }),
       weftInvalidArgument, "timeoutMs"},
      {"config.netName tcp", withConfig([](weftConfig_t& c) { c.netName = "tcp"; }),
       weftInvalidArgument, "netName"},
      {"config.splitShare 7", withConfig([](weftConfig_t& c) { c.splitShare = 7; }),
       weftInvalidArgument, "splitShare"},
      {"InitAll comms NULL", [&] { return weftCommInitAll(nullptr, 2, nullptr); },
       weftInvalidArgument, "comms"},
      {"InitAll nranks 0", [&] { return weftCommInitAll(&comm, 0, nullptr); },
       weftInvalidArgument, "nranks"},
      {"InitAll devlist", [&] { return weftCommInitAll(&comm, 2, devices); },
       weftInvalidArgument, "devlist"},
      {"InitFromEnv comm NULL", [&] { return weftCommInitFromEnv(nullptr, nullptr); },
       weftInvalidUsage, "WEFT_UNIQUE_ID"},
  });
}

TEST_CASE("weftCommInitFromEnv says which launcher variables it found") {
  unsetenv("WEFT_UNIQUE_ID");
  setenv("WEFT_RANK", "1", 1);
  unsetenv("WEFT_NRANKS");
  weftComm_t comm = nullptr;
  CHECK(weftCommInitFromEnv(&comm, nullptr) == weftInvalidUsage);
  CHECK_THAT(lastError(nullptr), Catch::Contains("found: WEFT_RANK=1"));
  setenv("WEFT_RANK", "one", 1);
  CHECK(weftCommInitFromEnv(&comm, nullptr) == weftInvalidArgument);
  CHECK_THAT(lastError(nullptr), Catch::Contains("WEFT_RANK"));
  setenv("WEFT_RANK", "0", 1);
  setenv("WEFT_NRANKS", "2", 1);
  setenv("WEFT_UNIQUE_ID", "abc", 1);
  CHECK(weftCommInitFromEnv(&comm, nullptr) == weftInvalidArgument);
  CHECK_THAT(lastError(nullptr), Catch::Contains("hex"));
  unsetenv("WEFT_UNIQUE_ID");
  unsetenv("WEFT_RANK");
  unsetenv("WEFT_NRANKS");
}

TEST_CASE("communicator functions reject NULL, destroyed and bad output arguments") {
  weftComm_t comm = soloComm();
  weftComm_t dead = soloComm();
  REQUIRE(weftCommDestroy(dead) == weftSuccess);
  weftResult_t async;
  int value;
  checkRows({
      {"Finalize NULL", [] { return weftCommFinalize(nullptr); }, weftInvalidArgument, "comm"},
      {"Finalize destroyed", [&] { return weftCommFinalize(dead); }, weftInvalidArgument,
       "not a live communicator"},
      {"Destroy NULL", [] { return weftCommDestroy(nullptr); }, weftInvalidArgument, "comm"},
      {"Destroy twice", [&] { return weftCommDestroy(dead); }, weftInvalidArgument,
       "not a live communicator"},
      {"Abort NULL", [] { return weftCommAbort(nullptr); }, weftInvalidArgument, "comm"},
      {"Abort destroyed", [&] { return weftCommAbort(dead); }, weftInvalidArgument,
       "not a live communicator"},
      {"GetAsyncError NULL comm", [&] { return weftCommGetAsyncError(nullptr, &async); },
       weftInvalidArgument, "comm"},
      {"GetAsyncError NULL out", [&] { return weftCommGetAsyncError(comm, nullptr); },
       weftInvalidArgument, "asyncError"},
      {"Count NULL comm", [&] { return weftCommCount(nullptr, &value); }, weftInvalidArgument,
       "comm"},
      {"Count NULL out", [&] { return weftCommCount(comm, nullptr); }, weftInvalidArgument,
       "count"},
      {"UserRank destroyed", [&] { return weftCommUserRank(dead, &value); },
       weftInvalidArgument, "not a live communicator"},
      {"UserRank NULL out", [&] { return weftCommUserRank(comm, nullptr); },
       weftInvalidArgument, "rank"},
  });
  CHECK(weftCommGetAsyncError(comm, &async) == weftSuccess);
  CHECK(async == weftSuccess);
  REQUIRE(weftCommFinalize(comm) == weftSuccess);
  CHECK(weftCommFinalize(comm) == weftInvalidUsage);
  CHECK_THAT(lastError(comm), Catch::Contains("already finalized"));
  float x = 1;
  CHECK(weftAllReduce(&x, &x, 1, weftFloat, weftSum, comm, nullptr) == weftInvalidUsage);
  CHECK_THAT(lastError(comm), Catch::Contains("finalized"));
  REQUIRE(weftCommDestroy(comm) == weftSuccess);
}

TEST_CASE("reduction operator functions reject bad arguments") {
  weftComm_t comm = soloComm();
  weftRedOp_t op;
  float scalar = 2;
  checkRows({
      {"op NULL",
       [&] { return weftRedOpCreatePreMulSum(nullptr, &scalar, weftFloat, weftScalarHostImmediate, comm); },
       weftInvalidArgument, "op"},
      {"scalar NULL",
       [&] { return weftRedOpCreatePreMulSum(&op, nullptr, weftFloat, weftScalarHostImmediate, comm); },
       weftInvalidArgument, "scalar"},
      {"datatype 12",
       [&] { return weftRedOpCreatePreMulSum(&op, &scalar, weftDataType_t(12), weftScalarHostImmediate, comm); },
       weftInvalidArgument, "datatype=12"},
      {"residence 5",
       [&] { return weftRedOpCreatePreMulSum(&op, &scalar, weftFloat, weftScalarResidence_t(5), comm); },
       weftInvalidArgument, "residence"},
      {"comm NULL",
       [&] { return weftRedOpCreatePreMulSum(&op, &scalar, weftFloat, weftScalarHostImmediate, nullptr); },
       weftInvalidArgument, "comm"},
      {"destroy built-in", [&] { return weftRedOpDestroy(weftSum, comm); }, weftInvalidArgument,
       "op=0"},
      {"destroy unknown", [&] { return weftRedOpDestroy(weftRedOp_t(99), comm); },
       weftInvalidArgument, "op=99"},
      {"destroy NULL comm", [&] { return weftRedOpDestroy(weftRedOp_t(5), nullptr); },
       weftInvalidArgument, "comm"},
  });
  REQUIRE(weftRedOpCreatePreMulSum(&op, &scalar, weftFloat, weftScalarHostImmediate, comm) ==
          weftSuccess);
  CHECK(op >= weftNumOps);
  double d[2] = {1, 2};
  CHECK(weftAllReduce(d, d, 2, weftDouble, op, comm, nullptr) == weftInvalidArgument);
  CHECK_THAT(lastError(comm), Catch::Contains("created for datatype float"));
  REQUIRE(weftRedOpDestroy(op, comm) == weftSuccess);
  CHECK(weftRedOpDestroy(op, comm) == weftInvalidArgument);
  float f = 1;
  CHECK(weftAllReduce(&f, &f, 1, weftFloat, op, comm, nullptr) == weftInvalidArgument);
  REQUIRE(weftCommDestroy(comm) == weftSuccess);
}

TEST_CASE("every collective and point-to-point call rejects bad arguments") {
  weftComm_t comm = soloComm();
  weftComm_t dead = soloComm();
  REQUIRE(weftCommDestroy(dead) == weftSuccess);
  std::vector<float> a(64, 1), b(64, 0);
  float* s = a.data();
  float* r = b.data();
  const auto bogusStream = reinterpret_cast<weftStream_t>(&a);
  const auto badType = static_cast<weftDataType_t>(12);
  const auto negType = static_cast<weftDataType_t>(-1);
  const auto badOp = static_cast<weftRedOp_t>(99);
  const auto negOp = static_cast<weftRedOp_t>(-1);
  checkRows({
      // AllReduce
      {"AllReduce NULL comm", [&] { return weftAllReduce(s, r, 4, weftFloat, weftSum, nullptr, nullptr); }, weftInvalidArgument, "comm"},
      {"AllReduce destroyed comm", [&] { return weftAllReduce(s, r, 4, weftFloat, weftSum, dead, nullptr); }, weftInvalidArgument, "not a live communicator"},
      {"AllReduce NULL sendbuff", [&] { return weftAllReduce(nullptr, r, 4, weftFloat, weftSum, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"AllReduce NULL recvbuff", [&] { return weftAllReduce(s, nullptr, 4, weftFloat, weftSum, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"AllReduce datatype 12", [&] { return weftAllReduce(s, r, 4, badType, weftSum, comm, nullptr); }, weftInvalidArgument, "datatype=12"},
      {"AllReduce datatype -1", [&] { return weftAllReduce(s, r, 4, negType, weftSum, comm, nullptr); }, weftInvalidArgument, "datatype=-1"},
      {"AllReduce op 99", [&] { return weftAllReduce(s, r, 4, weftFloat, badOp, comm, nullptr); }, weftInvalidArgument, "op=99"},
      {"AllReduce op -1", [&] { return weftAllReduce(s, r, 4, weftFloat, negOp, comm, nullptr); }, weftInvalidArgument, "op=-1"},
      {"AllReduce bogus stream", [&] { return weftAllReduce(s, r, 4, weftFloat, weftSum, comm, bogusStream); }, weftInvalidArgument, "stream"},
      {"AllReduce overlapping buffers", [&] { return weftAllReduce(s, s + 1, 4, weftFloat, weftSum, comm, nullptr); }, weftInvalidArgument, "overlap"},
      {"AllReduce huge count", [&] { return weftAllReduce(s, r, SIZE_MAX / 2, weftFloat, weftSum, comm, nullptr); }, weftInvalidArgument, "too large"},
      // Broadcast
      {"Broadcast root -1", [&] { return weftBroadcast(s, r, 4, weftFloat, -1, comm, nullptr); }, weftInvalidArgument, "root=-1"},
      {"Broadcast root 1", [&] { return weftBroadcast(s, r, 4, weftFloat, 1, comm, nullptr); }, weftInvalidArgument, "root=1"},
      {"Broadcast NULL recvbuff", [&] { return weftBroadcast(s, nullptr, 4, weftFloat, 0, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"Broadcast NULL sendbuff at root", [&] { return weftBroadcast(nullptr, r, 4, weftFloat, 0, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"Broadcast destroyed comm", [&] { return weftBroadcast(s, r, 4, weftFloat, 0, dead, nullptr); }, weftInvalidArgument, "not a live communicator"},
      {"Broadcast datatype 12", [&] { return weftBroadcast(s, r, 4, badType, 0, comm, nullptr); }, weftInvalidArgument, "datatype=12"},
      // Reduce
      {"Reduce root 5", [&] { return weftReduce(s, r, 4, weftFloat, weftSum, 5, comm, nullptr); }, weftInvalidArgument, "root=5"},
      {"Reduce op 99", [&] { return weftReduce(s, r, 4, weftFloat, badOp, 0, comm, nullptr); }, weftInvalidArgument, "op=99"},
      {"Reduce NULL recvbuff at root", [&] { return weftReduce(s, nullptr, 4, weftFloat, weftSum, 0, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"Reduce NULL sendbuff", [&] { return weftReduce(nullptr, r, 4, weftFloat, weftSum, 0, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"Reduce NULL comm", [&] { return weftReduce(s, r, 4, weftFloat, weftSum, 0, nullptr, nullptr); }, weftInvalidArgument, "comm"},
      // AllGather
      {"AllGather NULL sendbuff", [&] { return weftAllGather(nullptr, r, 4, weftFloat, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"AllGather NULL recvbuff", [&] { return weftAllGather(s, nullptr, 4, weftFloat, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"AllGather datatype 12", [&] { return weftAllGather(s, r, 4, badType, comm, nullptr); }, weftInvalidArgument, "datatype=12"},
      {"AllGather destroyed comm", [&] { return weftAllGather(s, r, 4, weftFloat, dead, nullptr); }, weftInvalidArgument, "not a live communicator"},
      {"AllGather bogus stream", [&] { return weftAllGather(s, r, 4, weftFloat, comm, bogusStream); }, weftInvalidArgument, "stream"},
      // ReduceScatter
      {"ReduceScatter op -1", [&] { return weftReduceScatter(s, r, 4, weftFloat, negOp, comm, nullptr); }, weftInvalidArgument, "op=-1"},
      {"ReduceScatter NULL recvbuff", [&] { return weftReduceScatter(s, nullptr, 4, weftFloat, weftSum, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"ReduceScatter NULL sendbuff", [&] { return weftReduceScatter(nullptr, r, 4, weftFloat, weftSum, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"ReduceScatter datatype -1", [&] { return weftReduceScatter(s, r, 4, negType, weftSum, comm, nullptr); }, weftInvalidArgument, "datatype=-1"},
      {"ReduceScatter NULL comm", [&] { return weftReduceScatter(s, r, 4, weftFloat, weftSum, nullptr, nullptr); }, weftInvalidArgument, "comm"},
      // AlltoAll
      {"AlltoAll NULL sendbuff", [&] { return weftAlltoAll(nullptr, r, 4, weftFloat, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"AlltoAll NULL recvbuff", [&] { return weftAlltoAll(s, nullptr, 4, weftFloat, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"AlltoAll datatype 12", [&] { return weftAlltoAll(s, r, 4, badType, comm, nullptr); }, weftInvalidArgument, "datatype=12"},
      {"AlltoAll NULL comm", [&] { return weftAlltoAll(s, r, 4, weftFloat, nullptr, nullptr); }, weftInvalidArgument, "comm"},
      // Gather / Scatter
      {"Gather root 1", [&] { return weftGather(s, r, 4, weftFloat, 1, comm, nullptr); }, weftInvalidArgument, "root=1"},
      {"Gather NULL recvbuff at root", [&] { return weftGather(s, nullptr, 4, weftFloat, 0, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"Gather NULL sendbuff", [&] { return weftGather(nullptr, r, 4, weftFloat, 0, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"Gather datatype 12", [&] { return weftGather(s, r, 4, badType, 0, comm, nullptr); }, weftInvalidArgument, "datatype=12"},
      {"Scatter root -2", [&] { return weftScatter(s, r, 4, weftFloat, -2, comm, nullptr); }, weftInvalidArgument, "root=-2"},
      {"Scatter NULL sendbuff at root", [&] { return weftScatter(nullptr, r, 4, weftFloat, 0, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"Scatter NULL recvbuff", [&] { return weftScatter(s, nullptr, 4, weftFloat, 0, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"Scatter destroyed comm", [&] { return weftScatter(s, r, 4, weftFloat, 0, dead, nullptr); }, weftInvalidArgument, "not a live communicator"},
      // Send / Recv
      {"Send peer -1", [&] { return weftSend(s, 4, weftFloat, -1, comm, nullptr); }, weftInvalidArgument, "peer=-1"},
      {"Send peer 1", [&] { return weftSend(s, 4, weftFloat, 1, comm, nullptr); }, weftInvalidArgument, "peer=1"},
      {"Send NULL sendbuff", [&] { return weftSend(nullptr, 4, weftFloat, 0, comm, nullptr); }, weftInvalidArgument, "sendbuff"},
      {"Send datatype 12", [&] { return weftSend(s, 4, badType, 0, comm, nullptr); }, weftInvalidArgument, "datatype=12"},
      {"Send NULL comm", [&] { return weftSend(s, 4, weftFloat, 0, nullptr, nullptr); }, weftInvalidArgument, "comm"},
      {"Send to self outside a group", [&] { return weftSend(s, 4, weftFloat, 0, comm, nullptr); }, weftInvalidUsage, "matching receive"},
      {"Recv peer 7", [&] { return weftRecv(r, 4, weftFloat, 7, comm, nullptr); }, weftInvalidArgument, "peer=7"},
      {"Recv NULL recvbuff", [&] { return weftRecv(nullptr, 4, weftFloat, 0, comm, nullptr); }, weftInvalidArgument, "recvbuff"},
      {"Recv destroyed comm", [&] { return weftRecv(r, 4, weftFloat, 0, dead, nullptr); }, weftInvalidArgument, "not a live communicator"},
      {"Recv bogus stream", [&] { return weftRecv(r, 4, weftFloat, 0, comm, bogusStream); }, weftInvalidArgument, "stream"},
      // Groups
      {"GroupEnd without GroupStart", [] { return weftGroupEnd(); }, weftInvalidUsage, "without a matching weftGroupStart"},
      // Streams
      {"StreamCreate NULL", [] { return weftStreamCreate(nullptr); }, weftInvalidArgument, "stream"},
      {"StreamSynchronize NULL", [] { return weftStreamSynchronize(nullptr); }, weftInvalidArgument, "stream"},
      {"StreamSynchronize bogus", [&] { return weftStreamSynchronize(bogusStream); }, weftInvalidArgument, "not a live stream"},
      {"StreamQuery NULL", [] { return weftStreamQuery(nullptr); }, weftInvalidArgument, "stream"},
      {"StreamDestroy bogus", [&] { return weftStreamDestroy(bogusStream); }, weftInvalidArgument, "not a live stream"},
  });
  // Count 0 is a valid no-op, even with NULL buffers.
  CHECK(weftAllReduce(nullptr, nullptr, 0, weftFloat, weftSum, comm, nullptr) == weftSuccess);
  CHECK(weftAlltoAll(nullptr, nullptr, 0, weftFloat, comm, nullptr) == weftSuccess);
  // A group with a bad operation launches nothing and says why.
  REQUIRE(weftGroupStart() == weftSuccess);
  CHECK(weftAllReduce(s, r, 4, badType, weftSum, comm, nullptr) == weftInvalidArgument);
  CHECK(weftGroupEnd() == weftInvalidArgument);
  CHECK_THAT(lastError(nullptr), Catch::Contains("group not launched"));
  REQUIRE(weftCommDestroy(comm) == weftSuccess);
}

TEST_CASE("a group whose receive overlaps another operation's buffer is refused") {
  ThreadComms comms(2);
  std::vector<int32_t> buf(4096);
  onEveryRank(2, [&](int r) {
    std::vector<int32_t> mine(4096);
    const int peer = 1 - r;
    RANK_REQUIRE(weftGroupStart() == weftSuccess);
    RANK_REQUIRE(weftSend(mine.data(), 4096, weftInt32, peer, comms[r], nullptr) == weftSuccess);
    RANK_REQUIRE(weftRecv(mine.data() + 100, 1000, weftInt32, peer, comms[r], nullptr) ==
                 weftSuccess);
    const weftResult_t groupEnd = weftGroupEnd();
    RANK_CHECK(groupEnd == weftInvalidUsage);
    RANK_CHECK_THAT(lastError(nullptr), Catch::Contains("overlapping memory"));
  });
}
