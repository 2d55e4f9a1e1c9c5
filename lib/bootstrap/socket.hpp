// TCP sockets for the bootstrap: addresses, an owning fd, listening, connecting with retry, and
// exact-length nonblocking transfers bounded by a Deadline and an optional abort flag.
//
// Every wait polls in slices of at most kAbortPollMs so that an abort flag set by another thread
// (weftCommAbort) releases it promptly. A deadline that passes is weftTimeout; a peer that closes
// or resets the connection is weftRemoteError naming the peer.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "lib/base/deadline.hpp"
#include "lib/base/error.hpp"

namespace weft {

// How often a wait looks at the abort flag.
inline constexpr int kAbortPollMs = 100;

// kAbortedResult (lib/base/error.hpp) is what an abort surfaces as; the message says "aborted".

// Throws Error(kAbortedResult, "<what>: aborted").
[[noreturn]] void failAborted(std::string_view what);

// True when the flag is set (a null flag is never set).
inline bool abortRequested(const std::atomic<bool>* abortFlag) {
  return abortFlag != nullptr && abortFlag->load(std::memory_order_acquire);
}

// An IPv4 or IPv6 socket address (or none: family() == AF_UNSPEC).
class SocketAddress {
 public:
  SocketAddress() = default;
  static SocketAddress fromSockaddr(const sockaddr* addr, socklen_t length);
  // Parses a numeric address ("127.0.0.1", "::1"); throws weftInvalidArgument otherwise.
  static SocketAddress parse(std::string_view ip, uint16_t port);

  int family() const { return storage_.ss_family; }
  bool empty() const { return family() == AF_UNSPEC; }
  uint16_t port() const;
  void setPort(uint16_t port);
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t length() const;
  // "192.0.2.2:4000", "[fd00::2]:4000".
  std::string toString() const;
  // The address without the port: "192.0.2.2", "fd00::2".
  std::string host() const;

  bool operator==(const SocketAddress& other) const;

 private:
  sockaddr_storage storage_{};
};

// An owned file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A connected, nonblocking stream socket and the name of whoever is on the other side, which
// every error message about it carries ("rank 3 at 192.0.2.7:40123" or just the address).
class Socket {
 public:
  Socket() = default;
  Socket(Fd fd, SocketAddress peerAddress);

  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  const SocketAddress& peerAddress() const { return peerAddress_; }
  const std::string& peer() const { return peer_; }
  void setPeerName(std::string name) { peer_ = std::move(name); }
  void close() { fd_.reset(); }

  // Moves what the kernel takes or has without blocking. Returns the bytes moved, or
  // kWouldBlock. receiveSome returns 0 when the peer has closed the connection. Errors throw.
  static constexpr long kWouldBlock = -1;
  long sendSome(std::span<const uint8_t> data);
  long receiveSome(std::span<uint8_t> data);

  // Exact-length transfers; `what` names the operation in error messages.
  void sendAll(std::span<const uint8_t> data, Deadline deadline, const std::atomic<bool>* abortFlag,
               std::string_view what);
  void receiveAll(std::span<uint8_t> data, Deadline deadline, const std::atomic<bool>* abortFlag,
                  std::string_view what);

 private:
  Fd fd_;
  SocketAddress peerAddress_;
  std::string peer_;
};

// Polls `fds` until one is ready, in slices of at most kAbortPollMs. Throws weftTimeout when the
// deadline passes and kAbortedResult when the flag is set, both prefixed with `what`.
void pollUntil(std::span<pollfd> fds, Deadline deadline, const std::atomic<bool>* abortFlag,
               std::string_view what);

// A nonblocking listening socket bound to `address` (port 0: an ephemeral port).
Fd listenOn(const SocketAddress& address);
// The address a socket is bound to.
SocketAddress localAddress(int fd);

// Accepts one pending connection without blocking; returns an invalid Socket when none is
// pending (or when the process is out of descriptors, which is logged).
Socket acceptPending(int listenFd);

// Connects to `address`, retrying while nobody listens there yet, until the deadline.
Socket connectTo(const SocketAddress& address, Deadline deadline,
                 const std::atomic<bool>* abortFlag);

}  // namespace weft
