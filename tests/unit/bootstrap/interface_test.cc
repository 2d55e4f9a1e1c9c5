#include "lib/bootstrap/interface.hpp"

#include <catch2/catch.hpp>
#include <vector>

#include "lib/base/error.hpp"

using Catch::Matchers::Contains;
using weft::Interface;
using weft::SocketAddress;

namespace {

Interface iface(const char* name, const char* ip, bool up = true, bool loopback = false) {
  return Interface{name, SocketAddress::parse(ip, 0), up, loopback};
}

// A machine as getifaddrs lists it: IPv4 addresses first, then IPv6.
std::vector<Interface> machine() {
  return {
      iface("lo", "127.0.0.1", true, true),
      iface("docker0", "172.17.0.1"),
      iface("eth1", "10.0.1.5", false),
      iface("eth0", "10.0.0.5"),
      iface("ib0", "192.168.1.5"),
      iface("lo", "::1", true, true),
      iface("eth0", "fe80::1"),
      iface("eth0", "fd00::5"),
      iface("ens6", "fd00::6"),
  };
}

std::string pick(std::string_view spec, const std::vector<Interface>& list = machine()) {
  const Interface chosen = weft::selectInterface(list, spec);
  return chosen.name + " " + chosen.address.host();
}

}  // namespace

TEST_CASE("WEFT_SOCKET_IFNAME name matching: prefixes, ^ excludes, = exact") {
  CHECK(weft::interfaceNameMatches("", "eth0"));
  CHECK(weft::interfaceNameMatches("eth", "eth0"));
  CHECK(weft::interfaceNameMatches("ib,eth", "eth0"));
  CHECK_FALSE(weft::interfaceNameMatches("eth", "veth0"));
  CHECK_FALSE(weft::interfaceNameMatches("eth0", "eth"));
  CHECK_FALSE(weft::interfaceNameMatches("^eth", "eth0"));
  CHECK(weft::interfaceNameMatches("^docker,lo", "eth0"));
  CHECK_FALSE(weft::interfaceNameMatches("^docker,lo", "docker0"));
  CHECK(weft::interfaceNameMatches("=eth0", "eth0"));
  CHECK_FALSE(weft::interfaceNameMatches("=eth", "eth0"));
  CHECK_FALSE(weft::interfaceNameMatches("^=eth0", "eth0"));
  CHECK(weft::interfaceNameMatches("^=eth", "eth0"));
}

TEST_CASE("without WEFT_SOCKET_IFNAME the first up, non-loopback interface wins, IPv4 first") {
  CHECK(pick("") == "docker0 172.17.0.1");
  CHECK(pick("", {iface("lo", "127.0.0.1", true, true), iface("eth0", "10.0.0.5", false)}) ==
        "lo 127.0.0.1");
  // IPv6 only: a global address, never a link-local one.
  CHECK(pick("", {iface("lo", "::1", true, true), iface("eth0", "fe80::1"),
                  iface("eth0", "fd00::5")}) == "eth0 fd00::5");
}

TEST_CASE("WEFT_SOCKET_IFNAME selects by prefix, exclusion and exact name") {
  CHECK(pick("eth") == "eth0 10.0.0.5");     // eth1 is down
  CHECK(pick("ib,eth") == "eth0 10.0.0.5");  // the machine's order, not the list's
  CHECK(pick("^docker") == "eth0 10.0.0.5");
  CHECK(pick("^docker,eth,ib") == "ens6 fd00::6");
  CHECK(pick("=ib0") == "ib0 192.168.1.5");
  CHECK(pick("lo") == "lo 127.0.0.1");
  CHECK(pick("^=docker0,eth0,ib0,ens6") == "lo 127.0.0.1");  // only loopback is left
}

TEST_CASE("WEFT_SOCKET_IFNAME that matches nothing is an error naming the variable") {
  for (const char* spec : {"mlx", "=eth", "eth1", "^docker,eth,ib,ens,lo"}) {
    try {
      pick(spec);
      FAIL("no error for " << spec);
    } catch (const weft::Error& e) {
      CHECK(e.result() == weftInvalidArgument);
      CHECK_THAT(e.what(), Contains(std::string("WEFT_SOCKET_IFNAME='") + spec + "'") &&
                               Contains("eth0") && Contains("eth1 (down)"));
    }
  }
  CHECK_THROWS_AS(weft::selectInterface({}, ""), weft::Error);
}
