#include "transports/loopback/loopback.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

namespace weft {
namespace {

// Messages are matched by (source, destination, tag). Like real transports, small messages go
// eagerly (a send that finds no receive leaves a copy and completes at once) and large ones by
// rendezvous (the send stays pending until its receive arrives and copies straight from it), so
// schedules are checked for not relying on sends finishing early.
class Fabric {
 public:
  static constexpr size_t kEagerBytes = 1024;

  void send(int from, int to, uint64_t tag, const void* buf, size_t bytes, Request* req) {
    std::lock_guard lock(mutex_);
    const Key key{from, to, tag};
    if (auto it = posted_.find(key); it != posted_.end()) {
      deliver(it->second, key, buf, bytes);
      posted_.erase(it);
    } else if (unexpected_.count(key)) {
      return setFailed(req, fmt::format("rank {}: two messages to rank {} with tag {:#x} in "
                                        "flight at once",
                                        from, to, tag));
    } else if (bytes <= kEagerBytes) {
      const auto* data = static_cast<const uint8_t*>(buf);
      unexpected_.try_emplace(key, Unexpected{{data, data + bytes}, nullptr, nullptr, 0});
    } else {
      unexpected_.try_emplace(key, Unexpected{{}, buf, req, bytes});
      return;  // completes when the receive arrives
    }
    req->bytes = bytes;
    req->state.store(Request::kDone, std::memory_order_release);
  }

  void recv(int from, int to, uint64_t tag, void* buf, size_t bytes, Request* req) {
    std::lock_guard lock(mutex_);
    const Key key{from, to, tag};
    if (auto it = unexpected_.find(key); it != unexpected_.end()) {
      Unexpected& u = it->second;
      if (u.sendReq) {
        deliver({buf, bytes, req}, key, u.sendBuf, u.sendBytes);
        u.sendReq->bytes = u.sendBytes;
        u.sendReq->state.store(Request::kDone, std::memory_order_release);
      } else {
        deliver({buf, bytes, req}, key, u.copy.data(), u.copy.size());
      }
      unexpected_.erase(it);
    } else if (!posted_.try_emplace(key, Posted{buf, bytes, req}).second) {
      setFailed(req, fmt::format("rank {}: two receives from rank {} with tag {:#x} posted at "
                                 "once",
                                 to, from, tag));
    }
  }

  void cancel(Request* req) {
    std::lock_guard lock(mutex_);
    std::erase_if(posted_, [&](const auto& entry) { return entry.second.req == req; });
    std::erase_if(unexpected_, [&](const auto& entry) { return entry.second.sendReq == req; });
    if (!req->finished()) req->state.store(Request::kCancelled, std::memory_order_release);
  }

 private:
  using Key = std::tuple<int, int, uint64_t>;
  struct Posted {
    void* buf;
    size_t bytes;
    Request* req;
  };

  static void setFailed(Request* req, std::string why) {
    req->error = std::move(why);
    req->state.store(Request::kFailed, std::memory_order_release);
  }

  static void deliver(const Posted& p, const Key& key, const void* data, size_t bytes) {
    if (bytes != p.bytes) {
      return setFailed(p.req, fmt::format("rank {}: message from rank {} (tag {:#x}) has {} "
                                          "bytes, expected {}",
                                          std::get<1>(key), std::get<0>(key), std::get<2>(key),
                                          bytes, p.bytes));
    }
    if (bytes > 0) std::memcpy(p.buf, data, bytes);
    p.req->bytes = bytes;
    p.req->state.store(Request::kDone, std::memory_order_release);
  }

  std::mutex mutex_;
  std::map<Key, Posted> posted_;
  struct Unexpected {
    std::vector<uint8_t> copy;   // eager: the data
    const void* sendBuf;         // rendezvous: the sender's buffer and request
    Request* sendReq;
    size_t sendBytes;
  };
  std::map<Key, Unexpected> unexpected_;
};

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<Fabric> fabric, int rank)
      : fabric_(std::move(fabric)), rank_(rank) {}
  const char* name() const override { return "loopback"; }
  void postSend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    req->state.store(Request::kPosted, std::memory_order_relaxed);
    fabric_->send(rank_, peer, tag, buf, bytes, req);
  }
  void postRecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    req->state.store(Request::kPosted, std::memory_order_relaxed);
    fabric_->recv(peer, rank_, tag, buf, bytes, req);
  }
  bool progress() override { return false; }
  void cancel(Request* req) override { fabric_->cancel(req); }
  void close(Deadline) override {}

 private:
  std::shared_ptr<Fabric> fabric_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> createLoopbackTransports(int nranks) {
  auto fabric = std::make_shared<Fabric>();
  std::vector<std::unique_ptr<Transport>> out;
  for (int r = 0; r < nranks; ++r) out.push_back(std::make_unique<LoopbackTransport>(fabric, r));
  return out;
}

}  // namespace weft
