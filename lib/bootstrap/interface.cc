#include "lib/bootstrap/interface.hpp"

#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "lib/base/env.hpp"
#include "lib/base/log.hpp"

namespace weft {
namespace {

// Link-local IPv6 addresses need the local interface index to be reachable, which differs from
// host to host, so they cannot be handed to other hosts.
bool isLinkLocalV6(const SocketAddress& address) {
  if (address.family() != AF_INET6) return false;
  auto* v6 = reinterpret_cast<const sockaddr_in6*>(address.get());
  return IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr);
}

std::vector<std::string_view> splitList(std::string_view list) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(start, comma - start);
    if (!item.empty()) items.push_back(item);
    start = comma + 1;
  }
  return items;
}

}  // namespace

std::vector<Interface> listInterfaces() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) failErrno(errno, "getifaddrs (listing network interfaces)");
  std::vector<Interface> result;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr) continue;
    const int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    Interface entry;
    entry.name = it->ifa_name;
    entry.address = SocketAddress::fromSockaddr(
        it->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    entry.up = (it->ifa_flags & IFF_UP) != 0;
    entry.loopback = (it->ifa_flags & IFF_LOOPBACK) != 0;
    result.push_back(std::move(entry));
  }
  ::freeifaddrs(list);
  return result;
}

bool interfaceNameMatches(std::string_view spec, std::string_view name) {
  bool exclude = false;
  bool exact = false;
  if (!spec.empty() && spec.front() == '^') {
    exclude = true;
    spec.remove_prefix(1);
  }
  if (!spec.empty() && spec.front() == '=') {
    exact = true;
    spec.remove_prefix(1);
  }
  const std::vector<std::string_view> items = splitList(spec);
  if (items.empty()) return true;  // "", "^", "=": no restriction
  const bool listed = std::any_of(items.begin(), items.end(), [&](std::string_view item) {
    return exact ? name == item : name.substr(0, item.size()) == item;
  });
  return exclude ? !listed : listed;
}

Interface selectInterface(std::span<const Interface> interfaces, std::string_view spec) {
  auto usable = [&](const Interface& i) {
    return i.up && !i.address.empty() && !isLinkLocalV6(i.address) &&
           interfaceNameMatches(spec, i.name);
  };
  // The first usable non-loopback interface, else the first usable loopback one.
  const Interface* chosen = nullptr;
  for (bool loopback : {false, true}) {
    for (const Interface& i : interfaces) {
      if (i.loopback == loopback && usable(i)) {
        chosen = &i;
        break;
      }
    }
    if (chosen) break;
  }
  if (chosen == nullptr) {
    std::vector<std::string_view> seen;
    std::string names;
    for (const Interface& i : interfaces) {
      if (std::find(seen.begin(), seen.end(), i.name) != seen.end()) continue;
      seen.push_back(i.name);
      if (!names.empty()) names += ", ";
      names += i.name + (i.up ? "" : " (down)");
    }
    if (spec.empty())
      fail(weftInvalidArgument,
           "no network interface is up with an IPv4 or IPv6 address for the bootstrap "
           "(interfaces: {}); set WEFT_SOCKET_IFNAME",
           names.empty() ? "none" : names);
    fail(weftInvalidArgument,
         "WEFT_SOCKET_IFNAME='{}' matches no interface that is up with an IPv4 or IPv6 address "
         "(interfaces: {})",
         spec, names.empty() ? "none" : names);
  }
  // On the chosen interface, IPv4 first.
  for (const Interface& i : interfaces)
    if (i.name == chosen->name && i.address.family() == AF_INET && usable(i)) return i;
  return *chosen;
}

SocketAddress bootstrapListenAddress() {
  const std::string spec = env().socketIfname;
  Interface chosen = selectInterface(listInterfaces(), spec);
  static std::once_flag logged;
  std::call_once(logged, [&] {
    WEFT_INFO(kSubsysBoot, "bootstrap: using interface {} ({}){}", chosen.name,
              chosen.address.host(),
              spec.empty() ? "" : fmt::format(" selected by WEFT_SOCKET_IFNAME={}", spec));
  });
  SocketAddress address = chosen.address;
  address.setPort(0);
  return address;
}

}  // namespace weft
