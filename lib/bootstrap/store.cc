#include "lib/bootstrap/store.hpp"

#include <netdb.h>
#include <sodium.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "lib/base/log.hpp"
#include "lib/bootstrap/frame.hpp"
#include "lib/bootstrap/handshake.hpp"
#include "lib/bootstrap/root_protocol.hpp"

namespace weft {
namespace {

constexpr std::string_view kClaimTag = "weft-store/1";  // then the rank, u32
constexpr std::string_view kSecretLabel = "weft store v1: secret";
constexpr std::string_view kSealLabel = "weft store v1: value key";
constexpr size_t kRequestNonceBytes = 24;
constexpr int64_t kReplyTimeoutMs = 2000;
// One connection attempt, so that every address a name resolves to gets its turn.
constexpr int64_t kAttemptMs = 1000;
// Authentication failures in a row that mean a wrong secret rather than a store shutting down.
constexpr int kMaxRejections = 3;

static_assert(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == 24);
static_assert(crypto_aead_xchacha20poly1305_ietf_ABYTES == 16);
using SealKey = std::array<uint8_t, crypto_aead_xchacha20poly1305_ietf_KEYBYTES>;

SealKey sealKey(const Secret& secret) {
  static_assert(sizeof(Secret) >= crypto_generichash_KEYBYTES_MIN);
  SealKey key;
  crypto_generichash(key.data(), key.size(), reinterpret_cast<const uint8_t*>(kSealLabel.data()),
                     kSealLabel.size(), secret.data(), secret.size());
  return key;
}

// (Sized and copied rather than inserted: GCC 12 misreads vector::insert of small spans here.)
std::vector<uint8_t> associatedData(std::span<const uint8_t> nonce, std::string_view key) {
  std::vector<uint8_t> ad(nonce.size() + key.size());
  std::memcpy(ad.data(), nonce.data(), nonce.size());
  if (!key.empty()) std::memcpy(ad.data() + nonce.size(), key.data(), key.size());
  return ad;
}

std::vector<uint8_t> encodeClaimBytes(int rank) {
  std::vector<uint8_t> claim(kClaimTag.size() + 4);
  std::memcpy(claim.data(), kClaimTag.data(), kClaimTag.size());
  const uint32_t r = static_cast<uint32_t>(rank);
  for (int i = 0; i < 4; ++i) claim[kClaimTag.size() + i] = static_cast<uint8_t>(r >> (8 * i));
  return claim;
}

// The rank a store client claims to be, or -1 when the claim is not a store client's.
int decodeClaimBytes(std::span<const uint8_t> claim) {
  if (claim.size() != kClaimTag.size() + 4 ||
      std::memcmp(claim.data(), kClaimTag.data(), kClaimTag.size()) != 0)
    return -1;
  WireReader r(claim.subspan(kClaimTag.size()), "store claim");
  return static_cast<int>(r.u32() & 0x7fffffff);
}

// Every address of the machine on `port`: IPv6 with IPv4 mapped when the kernel has IPv6, else
// IPv4. SO_REUSEADDR: a fixed port must be reusable while the last job's sockets linger.
Fd listenEverywhere(uint16_t port) {
  auto attempt = [&](int family, int& err) -> Fd {
    Fd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      err = errno;
      return fd;
    }
    int one = 1, zero = 0;
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (family == AF_INET6)
      (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    SocketAddress any = SocketAddress::parse(family == AF_INET6 ? "::" : "0.0.0.0", port);
    if (::bind(fd.get(), any.get(), any.length()) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
      err = errno;
      return Fd();
    }
    return fd;
  };
  int err = 0;
  Fd fd = attempt(AF_INET6, err);
  if (fd.valid()) return fd;
  if (err != EADDRINUSE && err != EACCES) {  // no IPv6 here: IPv4 only
    fd = attempt(AF_INET, err);
    if (fd.valid()) return fd;
  }
  fail(weftSystemError,
       "weft's rendezvous store cannot listen on port {}: {}{}", port, std::strerror(err),
       err == EADDRINUSE ? " (another job, or torchrun's own store, holds it: choose another "
                           "MASTER_PORT or set WEFT_STORE_PORT)"
                         : "");
}

std::vector<SocketAddress> resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0)
    fail(rc == EAI_AGAIN ? weftSystemError : weftInvalidArgument,
         "MASTER_ADDR={}: cannot resolve it: {}", host, ::gai_strerror(rc));
  std::vector<SocketAddress> out;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    SocketAddress address = SocketAddress::fromSockaddr(a->ai_addr, a->ai_addrlen);
    if (address.empty()) continue;
    address.setPort(port);
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(address);
  }
  ::freeaddrinfo(list);
  if (out.empty()) fail(weftInvalidArgument, "MASTER_ADDR={}: no IPv4 or IPv6 address", host);
  return out;
}

}  // namespace

// ---- secrets ---------------------------------------------------------------------------------

Secret storeSecret(std::string_view text) {
  ensureSodium();
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, sizeof(Secret));
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>(kSecretLabel.data()),
                            kSecretLabel.size());
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  Secret secret;
  crypto_generichash_final(&state, secret.data(), secret.size());
  return secret;
}

std::string readSecretFile(const std::string& path, std::string& warning) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(weftInvalidArgument, "WEFT_SECRET_FILE={}: cannot read it: {}", path,
                std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back())))
    secret.pop_back();
  if (secret.empty()) fail(weftInvalidArgument, "WEFT_SECRET_FILE={}: the file is empty", path);
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    warning = fmt::format("WEFT_SECRET_FILE={} can be read by others (mode {:04o}); make it 0600",
                          path, st.st_mode & 07777);
  return secret;
}

// ---- server ----------------------------------------------------------------------------------

struct StoreServerState {
  Secret secret{};
  SealKey key{};
  uint16_t port = 0;
  Fd listener;
  Fd wake;  // eventfd: set() and stop
  Deadline lifetime = Deadline::never();
  std::atomic<bool> stop{false};

  mutable std::mutex mutex;
  std::map<std::string, std::vector<uint8_t>> values;  // guarded by mutex
  std::map<std::string, int> served;                   // guarded by mutex
  std::thread thread;

  void poke() const {
    const uint64_t one = 1;
    (void)!::write(wake.get(), &one, sizeof one);
  }
  void serve();
};

namespace {

struct StoreConnection {
  enum class Stage { kHandshake, kRequest, kWaiting };
  Stage stage = Stage::kHandshake;
  Socket socket;
  std::unique_ptr<AcceptorHandshake> handshake;
  FrameReader reader;
  Deadline until = Deadline::never();
  int rank = -1;
  std::array<uint8_t, kRequestNonceBytes> nonce{};
  std::string key;
  bool closed = false;
};

}  // namespace

void StoreServerState::serve() {
  std::vector<std::unique_ptr<StoreConnection>> connections;
  const std::string where = fmt::format("weft's rendezvous store on port {}", port);
  auto drop = [&](StoreConnection& c, std::string_view why) {
    WEFT_WARN(kSubsysBoot, "{}: dropped connection from {}: {}", where, c.socket.peer(), why);
    c.closed = true;
    c.socket.close();
  };
  // Answers a parked request if its key is set; true when answered.
  auto answer = [&](StoreConnection& c) {
    std::vector<uint8_t> value;
    {
      std::lock_guard lock(mutex);
      auto it = values.find(c.key);
      if (it == values.end()) return false;
      value = it->second;
    }
    std::array<uint8_t, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES> nonce;
    randomBytes(nonce);
    const std::vector<uint8_t> ad = associatedData(c.nonce, c.key);
    std::vector<uint8_t> sealed(value.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES);
    unsigned long long sealedLength = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(sealed.data(), &sealedLength, value.data(),
                                               value.size(), ad.data(), ad.size(), nullptr,
                                               nonce.data(), key.data());
    WireWriter w;
    w.u8(0);
    w.bytes(nonce);
    w.bytes(std::span(sealed.data(), static_cast<size_t>(sealedLength)));
    try {
      sendFrame(c.socket, FrameType::kStoreReply, w.data(), Deadline::afterMs(kReplyTimeoutMs),
                &stop, "answering a store request");
      std::lock_guard lock(mutex);
      ++served[c.key];
      WEFT_TRACE(kSubsysBoot, "{}: gave '{}' to rank {}", where, c.key, c.rank);
    } catch (const std::exception& e) {
      WEFT_INFO(kSubsysBoot, "{}: could not answer rank {}: {}", where, c.rank, e.what());
    }
    c.closed = true;
    c.socket.close();
    return true;
  };
  auto onReadable = [&](StoreConnection& c) {
    switch (c.stage) {
      case StoreConnection::Stage::kHandshake: {
        if (!c.handshake->onReadable(c.socket)) return;
        c.rank = decodeClaimBytes(c.handshake->claim());
        if (c.rank < 0) {
          drop(c, "authenticated, but does not claim to be a store client");
          return;
        }
        c.handshake->confirm(c.socket);
        c.handshake.reset();
        c.socket.setPeerName(fmt::format("rank {} at {}", c.rank,
                                         c.socket.peerAddress().toString()));
        c.stage = StoreConnection::Stage::kRequest;
        return;
      }
      case StoreConnection::Stage::kRequest: {
        if (!c.reader.readSome(c.socket)) return;
        const Frame frame = c.reader.take();
        if (frame.type != FrameType::kStoreRequest)
          fail(weftRemoteError, "sent a {} message instead of a store request",
               frameTypeName(frame.type));
        WireReader r(frame.payload, fmt::format("store request from {}", c.socket.peer()));
        r.bytes(c.nonce);
        c.key = r.string(kMaxStoreKeyBytes);
        r.expectEnd();
        c.stage = StoreConnection::Stage::kWaiting;
        c.until = Deadline::never();  // the client's own deadline bounds its wait
        answer(c);
        return;
      }
      case StoreConnection::Stage::kWaiting: {
        std::array<uint8_t, 1> byte;
        if (c.socket.receiveSome(byte) == Socket::kWouldBlock) return;
        WEFT_INFO(kSubsysBoot, "{}: {} gave up waiting for '{}'", where, c.socket.peer(), c.key);
        c.closed = true;
        c.socket.close();
        return;
      }
    }
  };

  std::vector<pollfd> fds;
  while (!stop.load(std::memory_order_acquire) && !lifetime.expired()) {
    fds.assign({pollfd{listener.get(), POLLIN, 0}, pollfd{wake.get(), POLLIN, 0}});
    Deadline next = Deadline::afterMs(1000).earlier(lifetime);
    for (const auto& c : connections) {
      fds.push_back(pollfd{c->socket.fd(), POLLIN, 0});
      next = next.earlier(c->until);
    }
    if (::poll(fds.data(), fds.size(), next.remainingMs()) < 0 && errno != EINTR) {
      WEFT_WARN(kSubsysBoot, "{}: poll: {}", where, std::strerror(errno));
      break;
    }
    bool changed = false;
    if (fds[1].revents != 0) {
      uint64_t count;
      (void)!::read(wake.get(), &count, sizeof count);
      changed = true;
    }
    const size_t polled = connections.size();
    for (size_t i = 0; i < polled; ++i) {
      StoreConnection& c = *connections[i];
      try {
        if (fds[i + 2].revents != 0)
          onReadable(c);
        else if (c.until.expired())
          drop(c, fmt::format("did not authenticate and ask within {} ms", kHandshakeTimeoutMs));
        else if (changed && c.stage == StoreConnection::Stage::kWaiting)
          answer(c);
      } catch (const std::exception& e) {
        drop(c, e.what());
      }
    }
    if (fds[0].revents != 0) {
      for (;;) {
        Socket socket = acceptPending(listener.get());
        if (!socket.valid()) break;
        auto c = std::make_unique<StoreConnection>();
        c->socket = std::move(socket);
        c->handshake = std::make_unique<AcceptorHandshake>(secret);
        c->until = Deadline::afterMs(kHandshakeTimeoutMs);
        try {
          c->handshake->start(c->socket);
        } catch (const std::exception& e) {
          drop(*c, e.what());
          continue;
        }
        connections.push_back(std::move(c));
      }
    }
    std::erase_if(connections, [](const auto& c) { return c->closed; });
  }
  const std::string reason = stop.load() ? "its communicator formed" : "its lifetime ended";
  for (const auto& c : connections) {
    if (c->closed || c->stage != StoreConnection::Stage::kWaiting) continue;
    try {
      sendFrame(c->socket, FrameType::kError,
                encodeErrorMessage(weftRemoteError,
                                   fmt::format("{} is closing ({}) without '{}'", where, reason,
                                               c->key)),
                Deadline::afterMs(kReplyTimeoutMs), nullptr, "closing the store");
    } catch (const std::exception&) {
      // It learns from the closed connection instead.
    }
  }
  WEFT_INFO(kSubsysBoot, "{}: closed ({})", where, reason);
}

std::unique_ptr<StoreServer> StoreServer::start(uint16_t port, const Secret& secret,
                                                Deadline lifetime) {
  ensureSodium();
  auto state = std::make_shared<StoreServerState>();
  state->secret = secret;
  state->key = sealKey(secret);
  state->lifetime = lifetime;
  state->listener = listenEverywhere(port);
  state->port = localAddress(state->listener.get()).port();
  state->wake = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!state->wake.valid()) failErrno(errno, "weft's rendezvous store: eventfd");
  WEFT_INFO(kSubsysBoot, "weft's rendezvous store listening on port {}", state->port);
  state->thread = std::thread([s = state.get()] {
    try {
      s->serve();
    } catch (const std::exception& e) {
      WEFT_WARN(kSubsysBoot, "weft's rendezvous store on port {} failed: {}", s->port, e.what());
    }
    s->listener.reset();
  });
  std::unique_ptr<StoreServer> server(new StoreServer());
  server->state_ = std::move(state);
  return server;
}

StoreServer::~StoreServer() {
  state_->stop.store(true, std::memory_order_release);
  state_->poke();
  if (state_->thread.joinable()) state_->thread.join();
}

void StoreServer::set(const std::string& key, std::vector<uint8_t> value) {
  if (key.size() > kMaxStoreKeyBytes || value.size() > kMaxStoreValueBytes)
    fail(weftInternalError, "store: key of {} bytes or value of {} bytes is too large", key.size(),
         value.size());
  {
    std::lock_guard lock(state_->mutex);
    state_->values[key] = std::move(value);
  }
  state_->poke();
}

uint16_t StoreServer::port() const { return state_->port; }

int StoreServer::served(const std::string& key) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->served.find(key);
  return it == state_->served.end() ? 0 : it->second;
}

// ---- client ----------------------------------------------------------------------------------

std::vector<uint8_t> storeGet(const std::string& host, uint16_t port, const Secret& secret,
                              int rank, std::string_view key, Deadline deadline,
                              const std::atomic<bool>* abortFlag) {
  ensureSodium();
  if (key.size() > kMaxStoreKeyBytes) fail(weftInternalError, "store key too long");
  const std::string where = fmt::format("weft's rendezvous store at {}:{}", host, port);
  const std::vector<uint8_t> claim = encodeClaimBytes(rank);
  std::vector<SocketAddress> addresses;
  std::string lastError = "nobody answered";
  int rejections = 0;
  for (;;) {
    if (abortRequested(abortFlag)) failAborted(where);
    if (deadline.expired())
      fail(weftTimeout,
           "rank {}: timed out getting the unique id from {} (last error: {}); is rank 0 running "
           "and listening there?",
           rank, where, lastError);
    if (addresses.empty()) {
      try {
        addresses = resolve(host, port);
      } catch (const Error& e) {
        if (e.result() != weftSystemError) throw;  // a name that does not exist: say so now
        lastError = e.what();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
    }
    for (const SocketAddress& address : addresses) {
      Socket socket;
      try {
        socket = connectTo(address, Deadline::afterMs(kAttemptMs).earlier(deadline), abortFlag);
      } catch (const Error& e) {
        if (e.result() == kAbortedResult && abortRequested(abortFlag)) throw;
        lastError = e.what();
        continue;
      }
      socket.setPeerName(fmt::format("the store at {}", address.toString()));
      // A peer that never sends a challenge is not weft's store (torch's own store, say): give
      // it a handshake's time, then try again.
      try {
        authenticateToAcceptor(socket, secret, claim,
                               Deadline::afterMs(kHandshakeTimeoutMs).earlier(deadline),
                               abortFlag);
        rejections = 0;
      } catch (const Error& e) {
        if (e.result() == weftTimeout && !deadline.expired()) {
          lastError = fmt::format("{} accepted the connection but sent no weft handshake (is "
                                  "something other than weft's store listening there?)",
                                  address.toString());
          continue;
        }
        if (e.result() != weftRemoteError) throw;
        // A store that is shutting down (the previous communicator's, on the same port) closes
        // connections too: only repeated rejection means a wrong secret.
        lastError = e.what();
        if (++rejections < kMaxRejections) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          continue;
        }
        fail(weftRemoteError,
             "rank {}: {} rejected our proof of the store's secret {} times, or could not prove "
             "it knows it: are WEFT_SECRET / WEFT_SECRET_FILE the same on every rank, and is this "
             "the store of this job? ({})",
             rank, where, rejections, e.what());
      }
      std::array<uint8_t, kRequestNonceBytes> nonce;
      randomBytes(nonce);
      // nonce | u32 length | key, laid out by hand (see associatedData)
      std::vector<uint8_t> request = associatedData(nonce, std::string(4, '\0') + std::string(key));
      for (int i = 0; i < 4; ++i)
        request[nonce.size() + i] = static_cast<uint8_t>(key.size() >> (8 * i));
      Frame reply;
      try {
        sendFrame(socket, FrameType::kStoreRequest, request, deadline, abortFlag, where);
        reply = receiveFrameOfType(socket, FrameType::kStoreReply, deadline, abortFlag,
                                   fmt::format("rank {}: waiting for '{}' from {}", rank, key,
                                               where));
      } catch (const Error& e) {
        if (e.result() != weftRemoteError) throw;
        // Closed (or told "closing") before answering: a store on its way out; ask again.
        lastError = e.what();
        continue;
      }
      WireReader r(reply.payload, fmt::format("reply from {}", where));
      const uint8_t status = r.u8();
      if (status != 0) r.malformed(fmt::format("status {}", status));
      std::array<uint8_t, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES> replyNonce;
      r.bytes(replyNonce);
      const std::span<const uint8_t> sealed = r.rest();
      std::vector<uint8_t> value(sealed.size() - crypto_aead_xchacha20poly1305_ietf_ABYTES);
      const std::vector<uint8_t> ad = associatedData(nonce, key);
      const SealKey sk = sealKey(secret);
      unsigned long long length = 0;
      if (crypto_aead_xchacha20poly1305_ietf_decrypt(value.data(), &length, nullptr, sealed.data(),
                                                     sealed.size(), ad.data(), ad.size(),
                                                     replyNonce.data(), sk.data()) != 0)
        fail(weftRemoteError, "rank {}: the value from {} does not verify (tampered with?)", rank,
             where);
      value.resize(static_cast<size_t>(length));
      return value;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace weft
