// Helpers for the UCX transport tests: ranks are threads (support/thread_oob.hpp), each
// progressing its own transport. Everything here throws std::runtime_error on a mismatch so that
// runRanks() reports it from the main thread.
#pragma once

#include <fmt/format.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/deadline.hpp"
#include "support/thread_oob.hpp"
#include "transports/transport.hpp"
#include "transports/ucx/ucx_transport.hpp"

namespace weft::test {

// Generous: these tests run on loaded 2-core machines. Nothing asserts on time.
inline constexpr int64_t kTestTimeoutMs = 120000;
inline Deadline testDeadline() {
  return Deadline::afterMs(kTestTimeoutMs);
}

inline std::unique_ptr<Transport> makeUcx(OutOfBand& oob, UcxTransportOptions options = {}) {
  options.label = "test-r" + std::to_string(oob.rank());
  options.setupDeadline = testDeadline();
  return createUcxTransport(oob, options);
}

// Progresses until every request has finished (in any state). Throws when the deadline passes
// or when another rank of `group` has failed (it will not answer).
inline void waitFinished(Transport& t, const std::vector<Request*>& reqs, const char* what,
                         const ThreadOobGroup* group = nullptr, Deadline d = testDeadline()) {
  for (;;) {
    bool all = true;
    for (const Request* r : reqs) all = all && r->finished();
    if (all) return;
    if (!t.progress()) std::this_thread::yield();
    if (d.expired()) throw std::runtime_error(fmt::format("{}: timed out", what));
    if (group != nullptr && group->aborted()) {
      throw std::runtime_error(fmt::format("{}: another rank failed", what));
    }
  }
}

// Waits and requires every request Done.
inline void waitDone(Transport& t, const std::vector<Request*>& reqs, const char* what,
                     const ThreadOobGroup* group = nullptr) {
  waitFinished(t, reqs, what, group);
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto state = reqs[i]->state.load(std::memory_order_acquire);
    if (state != Request::kDone) {
      throw std::runtime_error(fmt::format("{}: request {} ended in state {}: {}", what, i,
                                           static_cast<int>(state), reqs[i]->error));
    }
  }
}

inline void waitDone(Transport& t, std::initializer_list<Request*> reqs, const char* what,
                     const ThreadOobGroup* group = nullptr) {
  waitDone(t, std::vector<Request*>(reqs), what, group);
}

// Deterministic content: byte i of a message identified by `seed`.
inline uint8_t patternByte(uint64_t seed, size_t i) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17));
}

inline std::vector<uint8_t> patterned(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = patternByte(seed, i);
  return v;
}

inline void expectPattern(const std::vector<uint8_t>& v, size_t bytes, uint64_t seed,
                          const std::string& what) {
  for (size_t i = 0; i < bytes; ++i) {
    if (v[i] != patternByte(seed, i)) {
      throw std::runtime_error(fmt::format("{}: byte {} of {} is {:#x}, expected {:#x}", what, i,
                                           bytes, v[i], patternByte(seed, i)));
    }
  }
}

inline void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// The end of every test rank: nobody sends any more, then close within the test deadline.
inline void barrierAndClose(Transport& t, OutOfBand& oob) {
  oob.barrier(testDeadline());
  t.close(testDeadline());
}

// This process's ends of established TCP connections, each with the bytes it has received
// (TCP_INFO): a connection between two thread ranks of this process has both its ends here.
inline std::vector<uint64_t> tcpEndsReceived() {
  std::vector<uint64_t> received;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || target.rfind("socket:[", 0) != 0) continue;
    const int fd = std::stoi(entry.path().filename().string());
    tcp_info info{};
    socklen_t length = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) continue;  // not tcp
    constexpr uint8_t kEstablished = 1;  // TCP_ESTABLISHED, the kernel's include/net/tcp_states.h
    if (info.tcpi_state == kEstablished) received.push_back(info.tcpi_bytes_received);
  }
  return received;
}

inline std::string joinErrors(const std::vector<std::string>& errors) {
  std::string all;
  for (size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) all += fmt::format("rank {}: {}\n", r, errors[r]);
  }
  return all;
}

}  // namespace weft::test
