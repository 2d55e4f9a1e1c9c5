#include "transports/loopback/loopback.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

namespace weft {
namespace {

// Messages are matched by (source, destination, tag). A send that finds its receive posted
// copies straight into it; otherwise the fabric keeps a copy until the receive arrives, so
// sends complete at once (as an eager protocol would).
class Fabric {
 public:
  void send(int from, int to, uint64_t tag, const void* buf, size_t bytes, Request* req) {
    std::lock_guard lock(mutex_);
    const Key key{from, to, tag};
    if (auto it = posted_.find(key); it != posted_.end()) {
      deliver(it->second, key, buf, bytes);
      posted_.erase(it);
    } else if (!unexpected_.try_emplace(key, static_cast<const uint8_t*>(buf),
                                        static_cast<const uint8_t*>(buf) + bytes)
                    .second) {
      return setFailed(req, fmt::format("rank {}: two messages to rank {} with tag {:#x} in "
                                        "flight at once",
                                        from, to, tag));
    }
    req->bytes = bytes;
    req->state.store(Request::kDone, std::memory_order_release);
  }

  void recv(int from, int to, uint64_t tag, void* buf, size_t bytes, Request* req) {
    std::lock_guard lock(mutex_);
    const Key key{from, to, tag};
    if (auto it = unexpected_.find(key); it != unexpected_.end()) {
      deliver({buf, bytes, req}, key, it->second.data(), it->second.size());
      unexpected_.erase(it);
    } else if (!posted_.try_emplace(key, Posted{buf, bytes, req}).second) {
      setFailed(req, fmt::format("rank {}: two receives from rank {} with tag {:#x} posted at "
                                 "once",
                                 to, from, tag));
    }
  }

  void cancel(Request* req) {
    std::lock_guard lock(mutex_);
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (it->second.req == req) {
        posted_.erase(it);
        break;
      }
    }
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
  std::map<Key, std::vector<uint8_t>> unexpected_;
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
