#include <catch2/catch.hpp>
#include <vector>

#include "lib/base/error.hpp"
#include "lib/bootstrap/frame.hpp"
#include "lib/bootstrap/handshake.hpp"
#include "lib/bootstrap/root_protocol.hpp"

using namespace weft;
using Catch::Matchers::Contains;

namespace {

std::string headerError(std::array<uint8_t, kFrameHeaderBytes> bytes) {
  try {
    decodeHeader(bytes, "192.0.2.9:1234");
  } catch (const Error& e) {
    CHECK(e.result() == weftRemoteError);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a frame header is validated before use: magic, version, type, length bounds") {
  const auto good = encodeHeader(FrameType::kHello, 100);
  const FrameHeader h = decodeHeader(good, "peer");
  CHECK(h.type == FrameType::kHello);
  CHECK(h.length == 100);

  auto badMagic = good;
  badMagic[0] ^= 1;
  CHECK_THAT(headerError(badMagic), Contains("192.0.2.9:1234") && Contains("not a weft"));
  auto badVersion = good;
  badVersion[4] = 2;
  CHECK_THAT(headerError(badVersion), Contains("version 2"));
  auto badType = good;
  badType[6] = 99;
  CHECK_THAT(headerError(badType), Contains("unknown type 99"));
  CHECK_THAT(headerError(encodeHeader(FrameType::kHello, 1 << 20)), Contains("hello message"));
  CHECK_THAT(headerError(encodeHeader(FrameType::kChallenge, 31)), Contains("challenge"));
  CHECK_THAT(headerError(encodeHeader(FrameType::kTable, 0xffffffffu)), Contains("table"));
}

TEST_CASE("hello and table messages round-trip and reject truncation") {
  Hello hello;
  hello.rank = 3;
  hello.nranks = 8;
  hello.waitMs = 1234;
  hello.info = RankInfo{SocketAddress::parse("fd00::7", 4242), "boot/ipc:[1]", 777};
  const std::vector<uint8_t> bytes = encodeHello(hello);
  const Hello back = decodeHello(bytes, "peer");
  CHECK(back.rank == 3);
  CHECK(back.nranks == 8);
  CHECK(back.waitMs == 1234);
  CHECK(back.info.address == hello.info.address);
  CHECK(back.info.hostId == "boot/ipc:[1]");
  CHECK(back.info.pid == 777);
  CHECK_THROWS_AS(decodeHello(std::span(bytes).first(bytes.size() - 1), "peer"), Error);

  RankTable table;
  table.commId[0] = 0x5a;
  table.ranks = {hello.info, RankInfo{SocketAddress::parse("10.0.0.1", 1), "", 1}};
  const RankTable t = decodeTable(encodeTable(table), "peer");
  CHECK(t.commId == table.commId);
  REQUIRE(t.ranks.size() == 2);
  CHECK(t.ranks[1].address == table.ranks[1].address);
}

TEST_CASE("claims round-trip, anything else is not a claim") {
  Claim claim{Claim::kRingLink, 5, {}};
  claim.commId[15] = 9;
  const auto back = decodeClaim(encodeClaim(claim));
  REQUIRE(back);
  CHECK(back->kind == Claim::kRingLink);
  CHECK(back->rank == 5);
  CHECK(back->commId == claim.commId);
  CHECK_FALSE(decodeClaim(std::vector<uint8_t>(21, 0)));
  CHECK_FALSE(decodeClaim(std::vector<uint8_t>(3, 1)));
}

TEST_CASE("rank lists are written as ranges") {
  CHECK(formatRanks(std::vector<int>{3}) == "rank 3");
  CHECK(formatRanks(std::vector<int>{0, 2, 3, 4, 5, 7}) == "ranks 0, 2-5, 7");
  CHECK(formatRanks(std::vector<int>{1, 2}) == "ranks 1-2");
}
