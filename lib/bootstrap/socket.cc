#include "lib/bootstrap/socket.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "lib/base/log.hpp"

namespace weft {

void failAborted(std::string_view what) {
  fail(kAbortedResult, "{}: aborted", what);
}

// ---- SocketAddress ---------------------------------------------------------------------------

SocketAddress SocketAddress::fromSockaddr(const sockaddr* addr, socklen_t length) {
  SocketAddress result;
  if (addr == nullptr) return result;
  if (addr->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in)))
    std::memcpy(&result.storage_, addr, sizeof(sockaddr_in));
  else if (addr->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6)))
    std::memcpy(&result.storage_, addr, sizeof(sockaddr_in6));
  return result;
}

SocketAddress SocketAddress::parse(std::string_view ip, uint16_t port) {
  const std::string text(ip);
  SocketAddress result;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&result.storage_);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&result.storage_);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
  } else if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
  } else {
    fail(weftInvalidArgument, "'{}' is not a numeric IPv4 or IPv6 address", text);
  }
  result.setPort(port);
  return result;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

socklen_t SocketAddress::length() const {
  if (family() == AF_INET) return sizeof(sockaddr_in);
  if (family() == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

std::string SocketAddress::host() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, text,
              sizeof text);
  else if (family() == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, text,
              sizeof text);
  else
    return "(no address)";
  return text;
}

std::string SocketAddress::toString() const {
  if (family() == AF_INET6) return fmt::format("[{}]:{}", host(), port());
  if (family() == AF_INET) return fmt::format("{}:{}", host(), port());
  return host();
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  if (family() != other.family()) return false;
  if (family() == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&storage_);
    auto* b = reinterpret_cast<const sockaddr_in*>(&other.storage_);
    return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
  }
  if (family() == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&storage_);
    auto* b = reinterpret_cast<const sockaddr_in6*>(&other.storage_);
    return a->sin6_port == b->sin6_port && a->sin6_scope_id == b->sin6_scope_id &&
           std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof a->sin6_addr) == 0;
  }
  return true;
}

// ---- Fd --------------------------------------------------------------------------------------

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

// ---- Socket ----------------------------------------------------------------------------------

Socket::Socket(Fd fd, SocketAddress peerAddress)
    : fd_(std::move(fd)), peerAddress_(peerAddress), peer_(peerAddress.toString()) {}

long Socket::sendSome(std::span<const uint8_t> data) {
  for (;;) {
    ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return kWouldBlock;
    if (errno == EPIPE || errno == ECONNRESET)
      fail(weftRemoteError, "{} closed the connection ({})", peer_, std::strerror(errno));
    failErrno(errno, fmt::format("send to {}", peer_));
  }
}

long Socket::receiveSome(std::span<uint8_t> data) {
  for (;;) {
    ssize_t n = ::recv(fd_.get(), data.data(), data.size(), MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return kWouldBlock;
    if (errno == ECONNRESET) fail(weftRemoteError, "{} reset the connection", peer_);
    failErrno(errno, fmt::format("receive from {}", peer_));
  }
}

void Socket::sendAll(std::span<const uint8_t> data, Deadline deadline,
                     const std::atomic<bool>* abortFlag, std::string_view what) {
  size_t done = 0;
  while (done < data.size()) {
    long n = sendSome(data.subspan(done));
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    pollfd p{fd_.get(), POLLOUT, 0};
    pollUntil(std::span(&p, 1), deadline, abortFlag, what);
  }
}

void Socket::receiveAll(std::span<uint8_t> data, Deadline deadline,
                        const std::atomic<bool>* abortFlag, std::string_view what) {
  size_t done = 0;
  while (done < data.size()) {
    long n = receiveSome(data.subspan(done));
    if (n == 0)
      fail(weftRemoteError, "{}: {} closed the connection after {} of {} bytes", what, peer_, done,
           data.size());
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    pollUntil(std::span(&p, 1), deadline, abortFlag, what);
  }
}

// ---- waiting ---------------------------------------------------------------------------------

void pollUntil(std::span<pollfd> fds, Deadline deadline, const std::atomic<bool>* abortFlag,
               std::string_view what) {
  for (;;) {
    if (abortRequested(abortFlag)) failAborted(what);
    const int left = deadline.remainingMs();
    if (left == 0) fail(weftTimeout, "{}: timed out", what);
    for (pollfd& p : fds) p.revents = 0;
    int rc = ::poll(fds.data(), fds.size(), std::min(left, kAbortPollMs));
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) failErrno(errno, fmt::format("{}: poll", what));
  }
}

// Sleeps up to `ms`, in abort-sized slices; returns early when the deadline passes.
static void sleepWithAbort(int ms, Deadline deadline, const std::atomic<bool>* abortFlag,
                           std::string_view what) {
  const Deadline until = Deadline::afterMs(ms).earlier(deadline);
  while (!until.expired()) {
    if (abortRequested(abortFlag)) failAborted(what);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(until.remainingMs() + 1, 10)));
  }
}

// ---- listening and connecting ----------------------------------------------------------------

static void setNoDelay(int fd) {
  int one = 1;
  // Bootstrap messages are small and latency-bound; failure to set it only costs latency.
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Fd listenOn(const SocketAddress& address) {
  Fd fd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) failErrno(errno, fmt::format("socket for listening on {}", address.host()));
  if (::bind(fd.get(), address.get(), address.length()) != 0)
    failErrno(errno, fmt::format("bind to {}", address.toString()));
  if (::listen(fd.get(), SOMAXCONN) != 0)
    failErrno(errno, fmt::format("listen on {}", address.toString()));
  return fd;
}

SocketAddress localAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0)
    failErrno(errno, "getsockname");
  return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
}

Socket acceptPending(int listenFd) {
  for (;;) {
    sockaddr_storage storage{};
    socklen_t length = sizeof storage;
    int fd = ::accept4(listenFd, reinterpret_cast<sockaddr*>(&storage), &length,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      return Socket(Fd(fd),
                    SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), length));
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Socket();
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      WEFT_WARN(kSubsysBoot, "bootstrap: cannot accept a connection: {}", std::strerror(errno));
      return Socket();
    }
    failErrno(errno, "accept");
  }
}

// Errors that mean "nobody listens there yet, or the network is not ready": try again.
static bool retryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH || err == EHOSTUNREACH ||
         err == ECONNRESET || err == EAGAIN || err == ECONNABORTED;
}

Socket connectTo(const SocketAddress& address, Deadline deadline,
                 const std::atomic<bool>* abortFlag) {
  const std::string what = fmt::format("connect to {}", address.toString());
  int backoffMs = 10;
  int lastError = 0;
  for (;;) {
    if (abortRequested(abortFlag)) failAborted(what);
    if (deadline.expired())
      fail(weftTimeout, "{}: timed out{}", what,
           lastError ? fmt::format(" (last error: {})", std::strerror(lastError)) : "");
    Fd fd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) failErrno(errno, what);
    int err = 0;
    if (::connect(fd.get(), address.get(), address.length()) != 0) err = errno;
    if (err == EINPROGRESS || err == EINTR) {
      pollfd p{fd.get(), POLLOUT, 0};
      try {
        pollUntil(std::span(&p, 1), deadline, abortFlag, what);
      } catch (const Error& e) {
        if (e.result() == weftTimeout && lastError)
          fail(weftTimeout, "{} (last error: {})", e.what(), std::strerror(lastError));
        throw;
      }
      socklen_t length = sizeof err;
      if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &length) != 0) err = errno;
    }
    if (err == 0) {
      setNoDelay(fd.get());
      return Socket(std::move(fd), address);
    }
    if (!retryableConnectError(err)) failErrno(err, what);
    if (err != lastError)
      WEFT_TRACE(kSubsysBoot, "bootstrap: {}: {}; retrying", what, std::strerror(err));
    lastError = err;
    sleepWithAbort(backoffMs, deadline, abortFlag, what);
    backoffMs = std::min(backoffMs * 2, 200);
  }
}

}  // namespace weft
