// Framed bootstrap messages. Every message on the wire is a 12-byte header
//   magic u32 "WEFT" | version u16 | type u16 | payload length u32     (little-endian)
// followed by the payload. A header is validated before anything else is read: a wrong magic or
// version, an unknown type, or a length outside the type's bounds rejects the connection
// (weftRemoteError naming the peer). Payloads are built and parsed with WireWriter/WireReader,
// whose reads are bounds-checked.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/deadline.hpp"
#include "lib/bootstrap/socket.hpp"

namespace weft {

inline constexpr uint32_t kFrameMagic = 0x54464557;  // the bytes "WEFT"
inline constexpr uint16_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 12;

// Limits that bound what a peer can make us allocate.
inline constexpr int kMaxRanks = 1 << 16;
inline constexpr size_t kMaxHostIdBytes = 256;
inline constexpr size_t kMaxMessageBytes = 4096;          // error text
inline constexpr size_t kMaxBlobBytes = size_t{1} << 30;  // one rank's allGather contribution
inline constexpr size_t kMaxStoreKeyBytes = 256;
inline constexpr size_t kMaxStoreValueBytes = 65536;

enum class FrameType : uint16_t {
  kChallenge = 1,  // acceptor -> connector: nonce
  kResponse = 2,   // connector -> acceptor: nonce, MAC, claim
  kConfirm = 3,    // acceptor -> connector: MAC
  kHello = 4,      // rank -> root: who I am and where I listen
  kTable = 5,      // root -> rank: every rank's info and the communicator id
  kError = 6,      // root -> rank: result code and message
  kRingData = 7,   // rank -> next rank on the ring: one allGather block
  kStoreRequest = 8,  // store client -> store (store.hpp): which key
  kStoreReply = 9,    // store -> store client: the value, sealed with the store's secret
};
const char* frameTypeName(FrameType type);

struct FrameHeader {
  FrameType type;
  uint32_t length;
};

std::array<uint8_t, kFrameHeaderBytes> encodeHeader(FrameType type, size_t length);
// Validates the header; throws weftRemoteError naming `peer` when it is not acceptable.
FrameHeader decodeHeader(std::span<const uint8_t, kFrameHeaderBytes> bytes, std::string_view peer);
// Header and payload in one buffer.
std::vector<uint8_t> encodeFrame(FrameType type, std::span<const uint8_t> payload);

struct Frame {
  FrameType type{};
  std::vector<uint8_t> payload;
};

// Assembles one frame from a nonblocking socket, reading never more than the frame, so that a
// poll loop can serve many connections at once.
class FrameReader {
 public:
  // Reads what is available. Returns true once a whole frame is in (then call take()). Throws
  // weftRemoteError on a bad header or when the peer closes the connection.
  bool readSome(Socket& socket);
  Frame take();

 private:
  std::array<uint8_t, kFrameHeaderBytes> header_{};
  size_t headerBytes_ = 0;
  bool haveHeader_ = false;
  Frame frame_;
  size_t payloadBytes_ = 0;
};

// Blocking (poll-driven) helpers; `what` names the operation in error messages.
void sendFrame(Socket& socket, FrameType type, std::span<const uint8_t> payload, Deadline deadline,
               const std::atomic<bool>* abortFlag, std::string_view what);
Frame receiveFrame(Socket& socket, Deadline deadline, const std::atomic<bool>* abortFlag,
                   std::string_view what);
// Receives one frame and checks its type; an Error frame from the root is turned into the Error
// it carries, anything else unexpected is weftRemoteError.
Frame receiveFrameOfType(Socket& socket, FrameType expected, Deadline deadline,
                         const std::atomic<bool>* abortFlag, std::string_view what);
// Sends `encoded` (a whole frame) on `to` while receiving one frame from `from`, so that a ring
// of ranks all sending at once cannot deadlock on full socket buffers.
Frame exchangeFrames(Socket& to, std::span<const uint8_t> encoded, Socket& from, Deadline deadline,
                     const std::atomic<bool>* abortFlag, std::string_view what);

class WireWriter {
 public:
  void u8(uint8_t v) { data_.push_back(v); }
  void u16(uint16_t v);
  void u32(uint32_t v);
  void u64(uint64_t v);
  void bytes(std::span<const uint8_t> v) { data_.insert(data_.end(), v.begin(), v.end()); }
  void string(std::string_view v);  // u32 length, then the bytes
  void address(const SocketAddress& a);
  std::vector<uint8_t>& data() { return data_; }

 private:
  std::vector<uint8_t> data_;
};

class WireReader {
 public:
  // `what` names the message in errors ("hello from 192.0.2.7:40123"); malformed input throws
  // Error(result, ...).
  WireReader(std::span<const uint8_t> data, std::string what, weftResult_t result = weftRemoteError)
      : data_(data), what_(std::move(what)), result_(result) {}
  uint8_t u8();
  uint16_t u16();
  uint32_t u32();
  uint64_t u64();
  void bytes(std::span<uint8_t> out);
  std::string string(size_t maxBytes);
  SocketAddress address();
  size_t remaining() const { return data_.size() - offset_; }
  std::span<const uint8_t> rest() const { return data_.subspan(offset_); }
  void expectEnd() const;
  [[noreturn]] void malformed(std::string_view why) const;

 private:
  std::span<const uint8_t> take(size_t n);
  std::span<const uint8_t> data_;
  size_t offset_ = 0;
  std::string what_;
  weftResult_t result_;
};

}  // namespace weft
