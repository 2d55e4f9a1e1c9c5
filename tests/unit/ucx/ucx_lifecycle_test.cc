// Set-up, close and destruction of UCX transports, and what happens when a peer goes away.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ucs/type/status.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "ucx_test_util.hpp"

extern char** environ;

using namespace weft;
using namespace weft::test;

namespace {

size_t countEntries(const char* dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir)) {
    while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// Whether `message` carries the text of some UCS error status.
bool namesUcsStatus(const std::string& message) {
  for (int s = -1; s > -120; --s) {
    std::string text = ucs_status_string(static_cast<ucs_status_t>(s));
    if (text.rfind("Unknown", 0) != 0 && message.find(text) != std::string::npos) return true;
  }
  return false;
}

// One small message each way, so that every connection is in use.
void exchangeOnce(Transport& t, int rank, const ThreadOobGroup* group) {
  std::vector<uint8_t> out = patterned(32, rank), in(32);
  Request send, recv;
  t.postRecv(1 - rank, 1, in.data(), in.size(), &recv);
  t.postSend(1 - rank, 1, out.data(), out.size(), &send);
  waitDone(t, {&send, &recv}, "exchange", group);
  expectPattern(in, 32, 1 - rank, "exchange");
}

}  // namespace

TEST_CASE(
    "transports created, closed after a barrier and destroyed again and again leak no fds or "
    "threads") {
  // Alternates close + destructor with the destructor alone, and shared memory with tcp (UCX
  // peer error handling).
  auto cycle = [](int i) {
    const bool closeFirst = i % 2 == 0;
    UcxTransportOptions options;
    options.peerErrorHandlingOnHost = i % 4 >= 2;
    ThreadOobGroup group(2);
    return joinErrors(runRanks(group, [&](int rank, OutOfBand& oob) {
      auto t = makeUcx(oob, options);
      exchangeOnce(*t, rank, &group);
      oob.barrier(testDeadline());
      if (closeFirst) {
        t->close(testDeadline());
        t->close(testDeadline());  // a second close does nothing
      }
      t.reset();  // the destructor after close, or instead of it
    }));
  };
  for (int i = 0; i < 4; ++i) REQUIRE(cycle(i).empty());
  const size_t fds = countEntries("/proc/self/fd"), threads = countEntries("/proc/self/task");
  for (int i = 0; i < 8; ++i) {
    INFO("cycle " << i);
    REQUIRE(cycle(i).empty());
  }
  CHECK(countEntries("/proc/self/fd") <= fds);
  CHECK(countEntries("/proc/self/task") <= threads);
}

TEST_CASE(
    "with UCX peer error handling, a vanished peer fails pending and later requests, naming both "
    "ranks") {
  ThreadOobGroup group(2);
  std::string recvError, sendError, laterError;
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    UcxTransportOptions options;
    options.peerErrorHandlingOnHost = true;  // tcp with keepalive even on this host
    auto t = makeUcx(oob, options);
    exchangeOnce(*t, rank, &group);
    if (rank == 1) {
      oob.barrier(testDeadline());
      t.reset();  // gone without close(), as if the rank had crashed
      return;
    }
    std::vector<uint8_t> in(100), big(4 << 20, 1);
    Request recv, send;
    t->postRecv(1, 5, in.data(), in.size(), &recv);
    t->postSend(1, 6, big.data(), big.size(), &send);  // rendezvous: needs the peer
    oob.barrier(testDeadline());  // rank 1 vanishes now, while this rank progresses
    waitFinished(*t, {&recv, &send}, "requests to a vanished peer", &group);
    expect(recv.state.load() == Request::kFailed, "receive from the vanished peer not Failed");
    expect(send.state.load() == Request::kFailed, "send to the vanished peer not Failed");
    recvError = recv.error;
    sendError = send.error;
    Request later;
    t->postRecv(1, 7, in.data(), in.size(), &later);
    expect(later.state.load() == Request::kFailed, "receive posted after the failure not Failed");
    laterError = later.error;
    t->close(testDeadline());
  });
  INFO(joinErrors(errors));
  REQUIRE(joinErrors(errors).empty());
  for (const std::string& e : {recvError, sendError, laterError}) {
    INFO(e);
    CHECK(e.rfind("rank 0: ", 0) == 0);
    CHECK(e.find("rank 1") != std::string::npos);
    CHECK(namesUcsStatus(e));
  }
}

namespace {

// OutOfBand for two processes over a socketpair: each message is a 4-byte length and the blob.
class SocketPairOob final : public OutOfBand {
 public:
  SocketPairOob(int fd, int rank) : fd_(fd), rank_(rank) {}
  int rank() const override { return rank_; }
  int nranks() const override { return 2; }
  std::vector<std::vector<uint8_t>> allGather(std::span<const uint8_t> mine,
                                              Deadline deadline) override {
    uint32_t size = static_cast<uint32_t>(mine.size());
    io(&size, sizeof size, deadline, true);
    io(const_cast<uint8_t*>(mine.data()), mine.size(), deadline, true);
    uint32_t theirSize = 0;
    io(&theirSize, sizeof theirSize, deadline, false);
    std::vector<std::vector<uint8_t>> all(2);
    all[rank_].assign(mine.begin(), mine.end());
    all[1 - rank_].resize(theirSize);
    io(all[1 - rank_].data(), theirSize, deadline, false);
    return all;
  }
  void barrier(Deadline deadline) override { allGather({}, deadline); }

 private:
  void io(void* data, size_t bytes, Deadline deadline, bool write) {
    auto* p = static_cast<uint8_t*>(data);
    while (bytes > 0) {
      pollfd pfd{fd_, static_cast<short>(write ? POLLOUT : POLLIN), 0};
      if (::poll(&pfd, 1, deadline.remainingMs()) == 0) fail(weftTimeout, "socket oob timed out");
      ssize_t n = write ? ::send(fd_, p, bytes, MSG_NOSIGNAL) : ::recv(fd_, p, bytes, 0);
      if (n == 0) fail(weftRemoteError, "socket oob: peer closed");
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        failErrno(errno, "socket oob");
      }
      p += n;
      bytes -= static_cast<size_t>(n);
    }
  }
  int fd_;
  int rank_;
};

constexpr const char* kChildFdVariable = "WEFT_TEST_UCX_CHILD_FD";

// Kills and reaps the child whatever happens in the test.
struct ChildProcess {
  pid_t pid = -1;
  ~ChildProcess() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace

// Rank 1 of the next test, in a process of its own: answers one ping, then waits to be killed.
TEST_CASE("(child process of the process-watch test)", "[.ucx-child]") {
  const char* fdText = std::getenv(kChildFdVariable);
  if (fdText == nullptr) return;
  SocketPairOob oob(std::atoi(fdText), 1);
  auto t = makeUcx(oob);
  std::vector<uint8_t> buf(64);
  Request recv, send;
  t->postRecv(0, 1, buf.data(), buf.size(), &recv);
  waitDone(*t, {&recv}, "child ping");
  t->postSend(0, 2, buf.data(), buf.size(), &send);
  waitDone(*t, {&send}, "child pong");
  Deadline d = testDeadline();
  while (!d.expired()) {  // progress like a live rank until the parent kills us
    t->progress();
    usleep(1000);
  }
  _exit(3);
}

TEST_CASE(
    "a peer process on this host that dies fails pending and later requests (process watch)") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  REQUIRE(fcntl(sv[1], F_SETFD, 0) == 0);  // the child's end survives exec
  char exe[PATH_MAX] = {};
  REQUIRE(readlink("/proc/self/exe", exe, sizeof exe - 1) > 0);
  std::string fdVar = std::string(kChildFdVariable) + "=" + std::to_string(sv[1]);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  env.push_back(fdVar.data());
  env.push_back(nullptr);
  char spec[] = "[.ucx-child]";
  char* argv[] = {exe, spec, nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  ChildProcess child;
  int spawned = posix_spawn(&child.pid, exe, &actions, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(sv[1]);
  REQUIRE(spawned == 0);

  SocketPairOob oob(sv[0], 0);
  auto t = makeUcx(oob);
  std::vector<uint8_t> ping = patterned(64, 1), pong(64);
  Request send, recv;
  t->postRecv(1, 2, pong.data(), pong.size(), &recv);
  t->postSend(1, 1, ping.data(), ping.size(), &send);
  REQUIRE_NOTHROW(waitDone(*t, {&send, &recv}, "ping-pong with the child"));
  CHECK(pong == ping);

  std::vector<uint8_t> in(100), big(4 << 20, 1);
  Request pendingRecv, pendingSend;
  t->postRecv(1, 3, in.data(), in.size(), &pendingRecv);
  t->postSend(1, 4, big.data(), big.size(), &pendingSend);
  REQUIRE(kill(child.pid, SIGKILL) == 0);
  REQUIRE_NOTHROW(waitFinished(*t, {&pendingRecv, &pendingSend}, "requests to a dead process"));
  CHECK(pendingRecv.state.load() == Request::kFailed);
  CHECK(pendingSend.state.load() == Request::kFailed);
  Request later;
  t->postSend(1, 5, big.data(), 8, &later);
  CHECK(later.state.load() == Request::kFailed);
  for (const std::string& e : {pendingRecv.error, pendingSend.error, later.error}) {
    INFO(e);
    CHECK(e.rfind("rank 0: ", 0) == 0);
    CHECK(e.find("rank 1") != std::string::npos);
    CHECK(e.find(ucs_status_string(UCS_ERR_CONNECTION_RESET)) != std::string::npos);
    CHECK(e.find(fmt::format("process {} exited", child.pid)) != std::string::npos);
  }
  t->close(testDeadline());
  t.reset();
  close(sv[0]);
}

TEST_CASE("set-up that times out waiting for a peer throws weftTimeout and leaks nothing") {
  auto attempt = [] {
    ThreadOobGroup group(2);
    weftResult_t result = weftSuccess;
    std::string message;
    auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
      if (rank == 1) return;  // never joins
      UcxTransportOptions options;
      options.setupDeadline = Deadline::afterMs(50);
      try {
        createUcxTransport(oob, options);
      } catch (const Error& e) {
        result = e.result();
        message = e.what();
      }
    });
    return std::make_pair(result, message);
  };
  attempt();
  const size_t fds = countEntries("/proc/self/fd"), threads = countEntries("/proc/self/task");
  for (int i = 0; i < 3; ++i) {
    auto [result, message] = attempt();
    CHECK(result == weftTimeout);
    CHECK_THAT(message, Catch::Contains("rank 0") && Catch::Contains("timed out"));
  }
  CHECK(countEntries("/proc/self/fd") <= fds);
  CHECK(countEntries("/proc/self/task") <= threads);
}

TEST_CASE("ranks that disagree on peerErrorHandlingOnHost are refused at set-up") {
  ThreadOobGroup group(2);
  std::vector<std::string> messages(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    UcxTransportOptions options;
    options.peerErrorHandlingOnHost = rank == 1;
    try {
      makeUcx(oob, options);
    } catch (const Error& e) {
      if (e.result() == weftInvalidUsage) messages[rank] = e.what();
    }
  });
  CHECK_THAT(messages[0],
             Catch::Contains(
                 "rank 0: rank 1 created its UCX transport with peerErrorHandlingOnHost=true"));
  CHECK_THAT(messages[1],
             Catch::Contains(
                 "rank 1: rank 0 created its UCX transport with peerErrorHandlingOnHost=false"));
}
