// weft's rendezvous store, for launches that carry no rendezvous of their own (torchrun-style
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT): rank 0 hosts it at MASTER_PORT and sets the unique
// id under a key; every other rank connects, proves it knows the store's secret and gets the
// value.
//
//   client -> store   handshake (handshake.hpp; claim "weft-store/1" | rank u32)
//   client -> store   StoreRequest  nonce 24 | key
//   store  -> client  StoreReply    status u8 (0) | nonce 24 | sealed value
//                     or Error      result u32 | message          (one request per connection)
//
// The value is sealed (XChaCha20-Poly1305) with a key derived from the store's secret, and the
// request's nonce and key are its associated data: an eavesdropper learns nothing of the unique
// id (which holds the bootstrap secret), and a reply cannot be replayed to another request. A
// request for a key not yet set waits until it is set.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/deadline.hpp"
#include "lib/bootstrap/socket.hpp"
#include "lib/bootstrap/unique_id.hpp"

namespace weft {

// The store's 16-byte secret from the configured text (WEFT_SECRET, or WEFT_SECRET_FILE's
// contents); any length, hashed.
Secret storeSecret(std::string_view text);
// The contents of a secret file without its trailing whitespace. Throws weftInvalidArgument when
// it cannot be read or is empty; `warning` is set when others may read it (mode not 0600).
std::string readSecretFile(const std::string& path, std::string& warning);

struct StoreServerState;

class StoreServer {
 public:
  // Listens on `port` on every address of this machine (IPv6 and IPv4). Throws weftSystemError
  // naming the port when it cannot (in use: another job, or torchrun's own store).
  static std::unique_ptr<StoreServer> start(uint16_t port, const Secret& secret,
                                            Deadline lifetime);
  ~StoreServer();  // stops and joins the thread
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // Sets (or replaces) a value; requests waiting for it are answered.
  void set(const std::string& key, std::vector<uint8_t> value);
  uint16_t port() const;
  // How many requests for `key` have been answered (tests, and when to stop early).
  int served(const std::string& key) const;

 private:
  StoreServer() = default;
  std::shared_ptr<StoreServerState> state_;
};

// Gets `key` from the store at host:port (a name or a numeric address; every address it
// resolves to is tried), waiting while nobody listens there yet and until the key is set.
// `rank` identifies this process to the store. Throws weftTimeout at the deadline (naming the
// store and the last connection error), weftRemoteError when the store does not know the secret
// or sends garbage, kAbortedResult when *abortFlag becomes true.
std::vector<uint8_t> storeGet(const std::string& host, uint16_t port, const Secret& secret,
                              int rank, std::string_view key, Deadline deadline,
                              const std::atomic<bool>* abortFlag);

}  // namespace weft
