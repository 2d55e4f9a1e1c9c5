// The contents of a weftUniqueId: where the bootstrap root listens and the job's secret, which
// every bootstrap connection proves it knows (the secret itself never crosses the wire).
//
// Layout in the 128 opaque bytes (little-endian): magic u32 "WTID" | format version u16 |
// root address (family u8, port u16, 16 address bytes, IPv6 scope id u32) | secret 16 bytes |
// zeros. Launchers pass it to ranks as 256 hex digits in WEFT_UNIQUE_ID.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "include/weft.h"
#include "lib/bootstrap/socket.hpp"

namespace weft {

using Secret = std::array<uint8_t, 16>;

struct UniqueId {
  static constexpr uint32_t kMagic = 0x44495457;  // the bytes "WTID"
  static constexpr uint16_t kVersion = 1;

  SocketAddress root;
  Secret secret{};

  void toWire(weftUniqueId& out) const;
  // Throws weftInvalidArgument ("unique id is not a weft unique id: ...") on a bad magic,
  // version or address.
  static UniqueId fromWire(const weftUniqueId& in);

  std::string toHex() const;
  static UniqueId fromHex(std::string_view hex);
};

// The 128 bytes as 256 lowercase hex digits, and back (upper case accepted). fromHex throws
// weftInvalidArgument on a wrong length or a character that is not a hex digit.
std::string uniqueIdToHex(const weftUniqueId& id);
weftUniqueId uniqueIdFromHex(std::string_view hex);

// Lowercase hex of any bytes (communicator ids in logs).
std::string toHex(std::span<const uint8_t> bytes);

}  // namespace weft
