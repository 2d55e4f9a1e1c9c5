#include "lib/bootstrap/unique_id.hpp"

#include <cstring>

#include "lib/bootstrap/frame.hpp"

namespace weft {

void UniqueId::toWire(weftUniqueId& out) const {
  WireWriter w;
  w.u32(kMagic);
  w.u16(kVersion);
  w.address(root);
  w.bytes(secret);
  static_assert(sizeof out.internal == WEFT_UNIQUE_ID_BYTES);
  std::memset(out.internal, 0, sizeof out.internal);
  std::memcpy(out.internal, w.data().data(), w.data().size());
}

UniqueId UniqueId::fromWire(const weftUniqueId& in) {
  WireReader r(std::span(reinterpret_cast<const uint8_t*>(in.internal), sizeof in.internal),
               "unique id (not a weft unique id?)", weftInvalidArgument);
  const uint32_t magic = r.u32();
  if (magic != kMagic)
    fail(weftInvalidArgument,
         "unique id is not a weft unique id: it starts with {:#010x}, expected {:#010x} (was it "
         "made by weftGetUniqueId and passed to every rank unchanged?)",
         magic, kMagic);
  const uint16_t version = r.u16();
  if (version != kVersion)
    fail(weftInvalidArgument,
         "unique id is not a weft unique id of format version {}: it says version {} (was it made "
         "by a different weft version?)",
         kVersion, version);
  UniqueId id;
  try {
    id.root = r.address();
  } catch (const Error& e) {
    fail(weftInvalidArgument, "unique id is not a weft unique id: bad root address ({})", e.what());
  }
  if (id.root.port() == 0)
    fail(weftInvalidArgument, "unique id is not a weft unique id: the root address has port 0");
  r.bytes(id.secret);
  return id;
}

std::string UniqueId::toHex() const {
  weftUniqueId wire;
  toWire(wire);
  return uniqueIdToHex(wire);
}

UniqueId UniqueId::fromHex(std::string_view hex) {
  return fromWire(uniqueIdFromHex(hex));
}

std::string toHex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string uniqueIdToHex(const weftUniqueId& id) {
  return toHex(std::span(reinterpret_cast<const uint8_t*>(id.internal), sizeof id.internal));
}

static int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

weftUniqueId uniqueIdFromHex(std::string_view hex) {
  weftUniqueId id;
  if (hex.size() != 2 * sizeof id.internal)
    fail(weftInvalidArgument, "unique id in hex has {} characters, expected {} ({} bytes)",
         hex.size(), 2 * sizeof id.internal, sizeof id.internal);
  for (size_t i = 0; i < sizeof id.internal; ++i) {
    const int hi = hexValue(hex[2 * i]);
    const int lo = hexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      const size_t at = hi < 0 ? 2 * i : 2 * i + 1;
      const unsigned char c = static_cast<unsigned char>(hex[at]);
      fail(weftInvalidArgument, "unique id in hex: character {} at position {} is not a hex digit",
           (c >= 0x20 && c < 0x7f) ? fmt::format("'{}'", static_cast<char>(c))
                                   : fmt::format("{:#04x}", c),
           at);
    }
    id.internal[i] = static_cast<char>((hi << 4) | lo);
  }
  return id;
}

}  // namespace weft
