// Which network interface bootstrap sockets listen on, chosen like NCCL_SOCKET_IFNAME:
//   WEFT_SOCKET_IFNAME=eth       interfaces whose name starts with "eth"
//   WEFT_SOCKET_IFNAME=eth0,ib   a comma list of prefixes
//   WEFT_SOCKET_IFNAME=^docker   every interface except those starting with "docker"
//   WEFT_SOCKET_IFNAME==eth0     exactly "eth0" (and "^=docker0" excludes exactly "docker0")
//   unset                        every interface
// Only interfaces that are up and have an IPv4 or a global IPv6 address count. Among those that
// match, the first that is not loopback wins, else the first loopback one; on the chosen
// interface an IPv4 address is preferred to an IPv6 one.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/bootstrap/socket.hpp"

namespace weft {

// One address of one interface (an interface with two addresses appears twice).
struct Interface {
  std::string name;
  SocketAddress address;
  bool up = true;
  bool loopback = false;
};

// The machine's interfaces with an IPv4 or IPv6 address, in the kernel's order.
std::vector<Interface> listInterfaces();

// True when `name` matches the WEFT_SOCKET_IFNAME value `spec` (empty spec: everything).
bool interfaceNameMatches(std::string_view spec, std::string_view name);

// Pure: picks the interface (and address) per the rules above. Throws weftInvalidArgument naming
// WEFT_SOCKET_IFNAME and the candidates when nothing qualifies.
Interface selectInterface(std::span<const Interface> interfaces, std::string_view spec);

// The address bootstrap sockets of this process listen on: the selected interface's address,
// port 0. Logged at INFO once.
SocketAddress bootstrapListenAddress();

}  // namespace weft
