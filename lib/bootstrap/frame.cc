#include "lib/bootstrap/frame.hpp"

#include <cstring>
#include <optional>

namespace weft {
namespace {

struct TypeInfo {
  FrameType type;
  const char* name;
  size_t minLength;
  size_t maxLength;
};

// Per-type payload bounds (see handshake.cc, root.cc and bootstrap.cc for the layouts).
constexpr TypeInfo kTypes[] = {
    {FrameType::kChallenge, "challenge", 32, 32},
    {FrameType::kResponse, "response", 64, 64 + 64},
    {FrameType::kConfirm, "confirm", 32, 32},
    {FrameType::kHello, "hello", 8, 1024},
    {FrameType::kTable, "table", 20, 20 + size_t{kMaxRanks} * (40 + kMaxHostIdBytes)},
    {FrameType::kError, "error", 8, 8 + kMaxMessageBytes},
    {FrameType::kRingData, "ring data", 12, 12 + kMaxBlobBytes},
    // nonce 24 | key (u32 length + bytes); status u8 | nonce 24 | sealed value (16-byte tag)
    {FrameType::kStoreRequest, "store request", 24 + 4, 24 + 4 + kMaxStoreKeyBytes},
    {FrameType::kStoreReply, "store reply", 1 + 24 + 16, 1 + 24 + 16 + kMaxStoreValueBytes},
};

const TypeInfo* typeInfo(uint16_t type) {
  for (const TypeInfo& info : kTypes)
    if (static_cast<uint16_t>(info.type) == type) return &info;
  return nullptr;
}

void putLE(uint8_t* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t getLE(const uint8_t* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{in[i]} << (8 * i);
  return v;
}

// Address families on the wire, independent of the host's AF_* values.
constexpr uint8_t kWireIPv4 = 4;
constexpr uint8_t kWireIPv6 = 6;

}  // namespace

const char* frameTypeName(FrameType type) {
  const TypeInfo* info = typeInfo(static_cast<uint16_t>(type));
  return info ? info->name : "unknown";
}

std::array<uint8_t, kFrameHeaderBytes> encodeHeader(FrameType type, size_t length) {
  std::array<uint8_t, kFrameHeaderBytes> out{};
  putLE(&out[0], kFrameMagic, 4);
  putLE(&out[4], kFrameVersion, 2);
  putLE(&out[6], static_cast<uint16_t>(type), 2);
  putLE(&out[8], static_cast<uint32_t>(length), 4);
  return out;
}

FrameHeader decodeHeader(std::span<const uint8_t, kFrameHeaderBytes> bytes, std::string_view peer) {
  const uint32_t magic = static_cast<uint32_t>(getLE(&bytes[0], 4));
  const uint16_t version = static_cast<uint16_t>(getLE(&bytes[4], 2));
  const uint16_t type = static_cast<uint16_t>(getLE(&bytes[6], 2));
  const uint32_t length = static_cast<uint32_t>(getLE(&bytes[8], 4));
  if (magic != kFrameMagic)
    fail(weftRemoteError, "{} sent something that is not a weft bootstrap message (magic {:#010x})",
         peer, magic);
  if (version != kFrameVersion)
    fail(weftRemoteError,
         "{} speaks bootstrap protocol version {}, this process version {} (mixed weft versions?)",
         peer, version, kFrameVersion);
  const TypeInfo* info = typeInfo(type);
  if (info == nullptr) fail(weftRemoteError, "{} sent a message of unknown type {}", peer, type);
  if (length < info->minLength || length > info->maxLength)
    fail(weftRemoteError, "{} sent a {} message of {} bytes (expected {} to {})", peer, info->name,
         length, info->minLength, info->maxLength);
  return FrameHeader{info->type, length};
}

std::vector<uint8_t> encodeFrame(FrameType type, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out;
  out.reserve(kFrameHeaderBytes + payload.size());
  const auto header = encodeHeader(type, payload.size());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// ---- FrameReader -----------------------------------------------------------------------------

bool FrameReader::readSome(Socket& socket) {
  while (!haveHeader_) {
    long n = socket.receiveSome(std::span(header_).subspan(headerBytes_));
    if (n == Socket::kWouldBlock) return false;
    if (n == 0) {
      if (headerBytes_ == 0) fail(weftRemoteError, "{} closed the connection", socket.peer());
      fail(weftRemoteError, "{} closed the connection in the middle of a message header",
           socket.peer());
    }
    headerBytes_ += static_cast<size_t>(n);
    if (headerBytes_ == kFrameHeaderBytes) {
      const FrameHeader header = decodeHeader(header_, socket.peer());
      frame_.type = header.type;
      frame_.payload.resize(header.length);
      payloadBytes_ = 0;
      haveHeader_ = true;
    }
  }
  while (payloadBytes_ < frame_.payload.size()) {
    long n = socket.receiveSome(std::span(frame_.payload).subspan(payloadBytes_));
    if (n == Socket::kWouldBlock) return false;
    if (n == 0)
      fail(weftRemoteError, "{} closed the connection after {} of {} bytes of a {} message",
           socket.peer(), payloadBytes_, frame_.payload.size(), frameTypeName(frame_.type));
    payloadBytes_ += static_cast<size_t>(n);
  }
  return true;
}

Frame FrameReader::take() {
  Frame out = std::move(frame_);
  frame_ = Frame();
  headerBytes_ = 0;
  haveHeader_ = false;
  payloadBytes_ = 0;
  return out;
}

// ---- blocking helpers ------------------------------------------------------------------------

void sendFrame(Socket& socket, FrameType type, std::span<const uint8_t> payload, Deadline deadline,
               const std::atomic<bool>* abortFlag, std::string_view what) {
  const std::vector<uint8_t> encoded = encodeFrame(type, payload);
  socket.sendAll(encoded, deadline, abortFlag, what);
}

Frame receiveFrame(Socket& socket, Deadline deadline, const std::atomic<bool>* abortFlag,
                   std::string_view what) {
  FrameReader reader;
  while (!reader.readSome(socket)) {
    pollfd p{socket.fd(), POLLIN, 0};
    pollUntil(std::span(&p, 1), deadline, abortFlag, what);
  }
  return reader.take();
}

Frame receiveFrameOfType(Socket& socket, FrameType expected, Deadline deadline,
                         const std::atomic<bool>* abortFlag, std::string_view what) {
  Frame frame = receiveFrame(socket, deadline, abortFlag, what);
  if (frame.type == expected) return frame;
  if (frame.type == FrameType::kError) {
    WireReader in(frame.payload, fmt::format("error message from {}", socket.peer()));
    const uint32_t code = in.u32();
    std::string message = in.string(kMaxMessageBytes);
    const bool known = code == weftInvalidUsage || code == weftTimeout || code == weftRemoteError ||
                       code == weftInvalidArgument || code == weftInternalError ||
                       code == weftSystemError;
    throw Error(known ? static_cast<weftResult_t>(code) : weftRemoteError, std::move(message));
  }
  fail(weftRemoteError, "{}: {} sent a {} message where a {} message was expected", what,
       socket.peer(), frameTypeName(frame.type), frameTypeName(expected));
}

Frame exchangeFrames(Socket& to, std::span<const uint8_t> encoded, Socket& from, Deadline deadline,
                     const std::atomic<bool>* abortFlag, std::string_view what) {
  FrameReader reader;
  size_t sent = 0;
  bool received = false;
  while (sent < encoded.size() || !received) {
    bool moved = false;
    if (sent < encoded.size()) {
      long n = to.sendSome(encoded.subspan(sent));
      if (n > 0) {
        sent += static_cast<size_t>(n);
        moved = true;
      }
    }
    if (!received) {
      received = reader.readSome(from);
      moved = moved || received;
    }
    if (moved) continue;
    pollfd fds[2];
    size_t count = 0;
    if (sent < encoded.size()) fds[count++] = pollfd{to.fd(), POLLOUT, 0};
    if (!received) fds[count++] = pollfd{from.fd(), POLLIN, 0};
    pollUntil(std::span(fds, count), deadline, abortFlag, what);
  }
  return reader.take();
}

// ---- WireWriter / WireReader -----------------------------------------------------------------

void WireWriter::u16(uint16_t v) {
  uint8_t b[2];
  putLE(b, v, 2);
  bytes(b);
}
void WireWriter::u32(uint32_t v) {
  uint8_t b[4];
  putLE(b, v, 4);
  bytes(b);
}
void WireWriter::u64(uint64_t v) {
  uint8_t b[8];
  putLE(b, v, 8);
  bytes(b);
}
void WireWriter::string(std::string_view v) {
  u32(static_cast<uint32_t>(v.size()));
  bytes(std::span(reinterpret_cast<const uint8_t*>(v.data()), v.size()));
}

// family u8 (4 or 6) | port u16 | address 16 bytes (IPv4 in the first 4) | IPv6 scope id u32
void WireWriter::address(const SocketAddress& a) {
  uint8_t raw[16] = {};
  uint32_t scope = 0;
  if (a.family() == AF_INET) {
    u8(kWireIPv4);
    std::memcpy(raw, &reinterpret_cast<const sockaddr_in*>(a.get())->sin_addr, 4);
  } else if (a.family() == AF_INET6) {
    u8(kWireIPv6);
    auto* v6 = reinterpret_cast<const sockaddr_in6*>(a.get());
    std::memcpy(raw, &v6->sin6_addr, 16);
    scope = v6->sin6_scope_id;
  } else {
    fail(weftInternalError, "cannot encode an empty socket address");
  }
  u16(a.port());
  bytes(raw);
  u32(scope);
}

std::span<const uint8_t> WireReader::take(size_t n) {
  if (n > remaining())
    malformed(fmt::format("needs {} more bytes at offset {}, has {}", n, offset_, remaining()));
  auto out = data_.subspan(offset_, n);
  offset_ += n;
  return out;
}

uint8_t WireReader::u8() {
  return take(1)[0];
}
uint16_t WireReader::u16() {
  return static_cast<uint16_t>(getLE(take(2).data(), 2));
}
uint32_t WireReader::u32() {
  return static_cast<uint32_t>(getLE(take(4).data(), 4));
}
uint64_t WireReader::u64() {
  return getLE(take(8).data(), 8);
}

void WireReader::bytes(std::span<uint8_t> out) {
  auto in = take(out.size());
  std::memcpy(out.data(), in.data(), in.size());
}

std::string WireReader::string(size_t maxBytes) {
  const uint32_t length = u32();
  if (length > maxBytes)
    malformed(fmt::format("string of {} bytes (at most {})", length, maxBytes));
  auto in = take(length);
  return std::string(reinterpret_cast<const char*>(in.data()), in.size());
}

SocketAddress WireReader::address() {
  const uint8_t family = u8();
  const uint16_t port = u16();
  uint8_t raw[16];
  bytes(raw);
  const uint32_t scope = u32();
  sockaddr_storage storage{};
  if (family == kWireIPv4) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
    v4->sin_family = AF_INET;
    std::memcpy(&v4->sin_addr, raw, 4);
    v4->sin_port = htons(port);
    return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), sizeof(sockaddr_in));
  }
  if (family == kWireIPv6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    v6->sin6_family = AF_INET6;
    std::memcpy(&v6->sin6_addr, raw, 16);
    v6->sin6_port = htons(port);
    v6->sin6_scope_id = scope;
    return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), sizeof(sockaddr_in6));
  }
  malformed(fmt::format("unknown address family {}", family));
}

void WireReader::expectEnd() const {
  if (remaining() != 0) malformed(fmt::format("{} unexpected trailing bytes", remaining()));
}

void WireReader::malformed(std::string_view why) const {
  fail(result_, "malformed {}: {}", what_, why);
}

}  // namespace weft
