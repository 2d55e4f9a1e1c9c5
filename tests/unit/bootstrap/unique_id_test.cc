#include "lib/bootstrap/unique_id.hpp"

#include <catch2/catch.hpp>
#include <cstring>

#include "lib/bootstrap/host_id.hpp"

using Catch::Matchers::Contains;
using weft::Error;
using weft::SocketAddress;
using weft::UniqueId;

namespace {

UniqueId sampleId(const SocketAddress& root) {
  UniqueId id;
  id.root = root;
  for (size_t i = 0; i < id.secret.size(); ++i) id.secret[i] = static_cast<uint8_t>(0xa0 + i);
  return id;
}

// The result code and message of what `body` throws.
template <class F>
std::pair<weftResult_t, std::string> thrown(F&& body) {
  try {
    body();
  } catch (const Error& e) {
    return {e.result(), e.what()};
  }
  return {weftSuccess, ""};
}

}  // namespace

TEST_CASE("a unique id survives the wire format and hex, for IPv4 and IPv6 roots") {
  for (const SocketAddress& root :
       {SocketAddress::parse("192.0.2.7", 40123), SocketAddress::parse("fd00::2", 1),
        SocketAddress::parse("127.0.0.1", 65535)}) {
    const UniqueId id = sampleId(root);
    weftUniqueId wire;
    id.toWire(wire);
    const UniqueId back = UniqueId::fromWire(wire);
    CHECK(back.root == root);
    CHECK(back.root.toString() == root.toString());
    CHECK(back.secret == id.secret);

    const std::string hex = id.toHex();
    CHECK(hex.size() == size_t{2} * WEFT_UNIQUE_ID_BYTES);
    CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
    const UniqueId fromHex = UniqueId::fromHex(hex);
    CHECK(fromHex.root == root);
    CHECK(fromHex.secret == id.secret);
    CHECK(weft::uniqueIdToHex(weft::uniqueIdFromHex(hex)) == hex);
  }
}

TEST_CASE("hex decoding accepts upper case and names a wrong length or a bad character") {
  const std::string hex = sampleId(SocketAddress::parse("10.1.2.3", 5000)).toHex();
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(UniqueId::fromHex(upper).root == SocketAddress::parse("10.1.2.3", 5000));

  auto [r1, m1] = thrown([&] { weft::uniqueIdFromHex(hex.substr(0, 255)); });
  CHECK(r1 == weftInvalidArgument);
  CHECK_THAT(m1, Contains("255 characters") && Contains("256"));

  auto [r2, m2] = thrown([&] { weft::uniqueIdFromHex(""); });
  CHECK(r2 == weftInvalidArgument);

  std::string bad = hex;
  bad[17] = 'g';
  auto [r3, m3] = thrown([&] { weft::uniqueIdFromHex(bad); });
  CHECK(r3 == weftInvalidArgument);
  CHECK_THAT(m3, Contains("'g'") && Contains("position 17"));
}

TEST_CASE("garbage is not a unique id: bad magic, version or address family") {
  weftUniqueId zeros;
  std::memset(&zeros, 0, sizeof zeros);
  auto [r1, m1] = thrown([&] { UniqueId::fromWire(zeros); });
  CHECK(r1 == weftInvalidArgument);
  CHECK_THAT(m1, Contains("unique id is not a weft unique id"));

  weftUniqueId random;
  for (size_t i = 0; i < sizeof random.internal; ++i)
    random.internal[i] = static_cast<char>(i * 131 + 7);
  auto [r2, m2] = thrown([&] { UniqueId::fromWire(random); });
  CHECK(r2 == weftInvalidArgument);
  CHECK_THAT(m2, Contains("unique id is not a weft unique id"));

  weftUniqueId wire;
  sampleId(SocketAddress::parse("10.0.0.1", 5000)).toWire(wire);
  weftUniqueId badVersion = wire;
  badVersion.internal[4] = 9;  // the format version follows the 4-byte magic
  auto [r3, m3] = thrown([&] { UniqueId::fromWire(badVersion); });
  CHECK(r3 == weftInvalidArgument);
  CHECK_THAT(m3, Contains("unique id is not a weft unique id") && Contains("version 9"));

  weftUniqueId badFamily = wire;
  badFamily.internal[6] = 5;  // the address family follows the version
  auto [r4, m4] = thrown([&] { UniqueId::fromWire(badFamily); });
  CHECK(r4 == weftInvalidArgument);
  CHECK_THAT(m4, Contains("unique id is not a weft unique id") && Contains("family"));

  weftUniqueId noPort = wire;
  noPort.internal[7] = noPort.internal[8] = 0;  // the port follows the family
  auto [r5, m5] = thrown([&] { UniqueId::fromWire(noPort); });
  CHECK(r5 == weftInvalidArgument);
}

TEST_CASE("the host identity is the boot id and the IPC namespace, equal across threads") {
  CHECK(weft::hostIdentityFrom("0b7c-11\n", "ipc:[4026531839]") == "0b7c-11/ipc:[4026531839]");
  CHECK(weft::hostIdentityFrom("a", "ipc:[1]") != weft::hostIdentityFrom("a", "ipc:[2]"));
  CHECK(weft::hostIdentityFrom("a", "ipc:[1]") != weft::hostIdentityFrom("b", "ipc:[1]"));
  // WEFT_HOST_ID: equal values are one host, and never equal to an identity from the kernel.
  CHECK(weft::hostIdentityOverride("node7") == weft::hostIdentityOverride("node7"));
  CHECK(weft::hostIdentityOverride("node7") != weft::hostIdentityOverride("node8"));
  CHECK(weft::hostIdentityOverride("a/ipc:[1]") != weft::hostIdentityFrom("a", "ipc:[1]"));
  const std::string& mine = weft::hostIdentity();
  CHECK_FALSE(mine.empty());
  CHECK(mine.size() <= 256);
  CHECK(&weft::hostIdentity() == &mine);
}
