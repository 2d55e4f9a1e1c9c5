// The shm transport between ranks that are separate processes (forked children, see
// process_ranks.hpp): large messages by CMA and through the mailbox, and what happens when a
// peer process is killed.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <catch2/catch.hpp>
#include <cstddef>

#include "process_ranks.hpp"
#include "shm_test_util.hpp"

using namespace weft;
using namespace weft::test;

namespace {

// Makes process_vm_readv fail with `err` in this process from now on (a seccomp filter), as a
// kernel or container that forbids CMA would.
void refuseCma(int err) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K,
               SECCOMP_RET_ERRNO | (static_cast<uint32_t>(err) & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  expect(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
             prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0,
         "cannot install the seccomp filter");
}

}  // namespace

TEST_CASE("two rank processes ping-pong 0 B to 16 MiB intact by CMA and through the mailbox") {
  const std::vector<size_t> sizes = {0, 1, 8, 4096, 65536, 1 << 20, 16 << 20};
  for (ShmCopy copy : {ShmCopy::kCma, ShmCopy::kMailbox, ShmCopy::kAuto}) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      const std::string name = uniqueSegmentName();
      auto outcomes = runProcesses(2, [&](int rank, ProcessOob& oob) {
        ShmRank r = makeShmRank(oob, name, copy, /*threads=*/false);
        Transport& t = r.t();
        const auto stop = [&oob] { return oob.othersFailed(); };
        const int peer = 1 - rank;
        for (size_t s = 0; s < sizes.size(); ++s) {
          const size_t bytes = sizes[s];
          for (uint64_t iter = 0; iter < 3; ++iter) {
            const uint64_t pingSeed = s * 100 + iter * 2, pongSeed = pingSeed + 1;
            const uint64_t pingTag = s * 16 + iter * 2, pongTag = pingTag + 1;
            std::vector<uint8_t> in(bytes + 1, 0xAB);
            Request send, recv;
            if (rank == 0) {
              std::vector<uint8_t> out = patterned(bytes, pingSeed);
              t.postRecv(peer, pongTag, in.data(), bytes, &recv);
              t.postSend(peer, pingTag, out.data(), bytes, &send);
              waitDone(t, {&send, &recv}, "ping", stop);
              expectPattern(in, bytes, pongSeed, fmt::format("pong of {} bytes", bytes));
            } else {
              t.postRecv(peer, pingTag, in.data(), bytes, &recv);
              waitDone(t, {&recv}, "ping recv", stop);
              expectPattern(in, bytes, pingSeed, fmt::format("ping of {} bytes", bytes));
              std::vector<uint8_t> out = patterned(bytes, pongSeed);
              t.postSend(peer, pongTag, out.data(), bytes, &send);
              waitDone(t, {&send}, "pong send", stop);
            }
            expect(recv.bytes == bytes, fmt::format("recv.bytes {} != {}", recv.bytes, bytes));
            expect(in[bytes] == 0xAB, fmt::format("guard byte after {} bytes overwritten", bytes));
          }
        }
        barrierAndClose(t, oob);
      });
      INFO(joinErrors(outcomes));
      CHECK(joinErrors(outcomes).empty());
    }
  }
}

TEST_CASE("rank processes that sleep in waitForActivity are woken by their peer's doorbell") {
  for (ShmCopy copy : {ShmCopy::kCma, ShmCopy::kMailbox}) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      const std::string name = uniqueSegmentName();
      auto outcomes = runProcesses(2, [&](int rank, ProcessOob& oob) {
        ShmRank r = makeShmRank(oob, name, copy, /*threads=*/false);
        sleepingPingPong(r.t(), rank, [&oob] { return oob.othersFailed(); });
        barrierAndClose(r.t(), oob);
      });
      INFO(joinErrors(outcomes));
      CHECK(joinErrors(outcomes).empty());
    }
  }
}

TEST_CASE("four rank processes exchange all-to-all, self included") {
  const int n = 4;
  for (ShmCopy copy : {ShmCopy::kAuto, ShmCopy::kMailbox}) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      const std::string name = uniqueSegmentName();
      auto outcomes = runProcesses(n, [&](int rank, ProcessOob& oob) {
        ShmRank r = makeShmRank(oob, name, copy, /*threads=*/false);
        Transport& t = r.t();
        const auto stop = [&oob] { return oob.othersFailed(); };
        for (size_t bytes : {size_t{64}, size_t{200000}}) {
          auto seed = [&](int src, int dst) { return uint64_t(src) * 64 + dst + bytes; };
          std::vector<Request> sends(n), recvs(n);
          std::vector<std::vector<uint8_t>> out(n), in(n);
          std::vector<Request*> all;
          for (int p = 0; p < n; ++p) {
            in[p].assign(bytes, 0);
            t.postRecv(p, bytes, in[p].data(), bytes, &recvs[p]);
            all.push_back(&recvs[p]);
          }
          for (int k = 1; k <= n; ++k) {
            int p = (rank + k) % n;
            out[p] = patterned(bytes, seed(rank, p));
            t.postSend(p, bytes, out[p].data(), bytes, &sends[p]);
            all.push_back(&sends[p]);
          }
          waitDone(t, all, "all-to-all", stop);
          for (int p = 0; p < n; ++p) {
            expectPattern(in[p], bytes, seed(p, rank), fmt::format("from rank {}", p));
          }
        }
        barrierAndClose(t, oob);
      });
      INFO(joinErrors(outcomes));
      CHECK(joinErrors(outcomes).empty());
    }
  }
}

TEST_CASE(
    "a peer process killed while this rank waits fails its requests, naming it, and close "
    "does not wait for it") {
  for (ShmCopy copy : {ShmCopy::kCma, ShmCopy::kMailbox}) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      const std::string name = uniqueSegmentName();
      auto outcomes = runProcesses(2, [&](int rank, ProcessOob& oob) {
        ShmRank r = makeShmRank(oob, name, copy, /*threads=*/false);
        Transport& t = r.t();
        std::vector<uint8_t> small(100), big = patterned(4 << 20, 3);
        Request send, recv;
        t.postRecv(1 - rank, 1, small.data(), small.size(), &recv);
        t.postSend(1 - rank, 1, small.data(), small.size(), &send);
        waitDone(t, {&send, &recv}, "exchange before the kill");
        if (rank == 1) {
          oob.barrier(testDeadline());
          Deadline d = testDeadline();
          while (!d.expired()) {  // a live rank, until rank 0 kills it
            t.progress();
            usleep(1000);
          }
          return;
        }
        Request pendingRecv, pendingSend, eager;
        t.postRecv(1, 5, small.data(), small.size(), &pendingRecv);
        t.postSend(1, 6, big.data(), big.size(), &pendingSend);  // announced, never taken
        oob.barrier(testDeadline());
        const pid_t victim = r.group.pids[1];
        expect(kill(victim, SIGKILL) == 0, "kill failed");
        const Clock::time_point killed = Clock::now();
        waitFinished(t, {&pendingRecv, &pendingSend}, "requests to a killed process", {},
                     Deadline::afterMs(60000));
        const double waitedMs =
            std::chrono::duration<double, std::milli>(Clock::now() - killed).count();
        expect(pendingRecv.state.load() == Request::kFailed, "pending receive not Failed");
        expect(pendingSend.state.load() == Request::kFailed, "pending send not Failed");
        Request laterRecv, laterSend;
        t.postRecv(1, 7, small.data(), small.size(), &laterRecv);
        t.postSend(1, 8, small.data(), small.size(), &laterSend);
        expect(laterRecv.state.load() == Request::kFailed, "later receive not Failed");
        expect(laterSend.state.load() == Request::kFailed, "later send not Failed");
        const Clock::time_point closing = Clock::now();
        t.close(testDeadline());
        const double closeMs =
            std::chrono::duration<double, std::milli>(Clock::now() - closing).count();
        oob.note(fmt::format("{}\n{}\n{}\n{}\n{}\n{:.0f}\n{:.0f}", victim, pendingRecv.error,
                             pendingSend.error, laterRecv.error, laterSend.error, waitedMs,
                             closeMs));
      });
      REQUIRE(outcomes.size() == 2);
      INFO(outcomes[0].error);
      REQUIRE(outcomes[0].error.empty());
      CHECK(outcomes[1].error == "killed by signal 9");
      std::vector<std::string> lines;
      for (size_t at = 0, end; at <= outcomes[0].note.size(); at = end + 1) {
        end = outcomes[0].note.find('\n', at);
        if (end == std::string::npos) end = outcomes[0].note.size();
        lines.push_back(outcomes[0].note.substr(at, end - at));
      }
      REQUIRE(lines.size() == 7);
      const std::string exited = fmt::format("rank 1 (pid {}) exited", lines[0]);
      for (size_t i = 1; i <= 4; ++i) {
        INFO(lines[i]);
        CHECK_THAT(lines[i], Catch::StartsWith("rank 0: ") && Catch::EndsWith(exited));
      }
      CHECK_THAT(lines[1], Catch::StartsWith("rank 0: recv from rank 1 (tag 0x5, 100 bytes)"));
      CHECK_THAT(lines[2], Catch::StartsWith("rank 0: send to rank 1 (tag 0x6, 4194304 bytes)"));
      INFO("noticed after " << lines[5] << " ms, closed in " << lines[6] << " ms");
      CHECK(std::stod(lines[5]) < 30000);  // generous: the watch polls every few ms
      CHECK(std::stod(lines[6]) < 30000);
    }
  }
}

TEST_CASE(
    "when the kernel refuses CMA, kAuto goes through the mailbox and kCma fails the receive") {
  for (int err : {EPERM, ENOSYS}) {
    for (ShmCopy copy : {ShmCopy::kAuto, ShmCopy::kCma}) {
      DYNAMIC_SECTION(std::strerror(err) << ", copy " << shmCopyName(copy)) {
        const std::string name = uniqueSegmentName();
        auto outcomes = runProcesses(2, [&](int rank, ProcessOob& oob) {
          refuseCma(err);
          ShmRank r = makeShmRank(oob, name, copy, /*threads=*/false);
          Transport& t = r.t();
          const auto stop = [&oob] { return oob.othersFailed(); };
          for (size_t bytes : {size_t{100000}, size_t{16} << 20, size_t{100000}}) {
            Request req;
            std::vector<uint8_t> buf = patterned(bytes, bytes);
            if (rank == 0) {
              t.postSend(1, bytes, buf.data(), bytes, &req);
            } else {
              buf.assign(bytes, 0);
              t.postRecv(0, bytes, buf.data(), bytes, &req);
            }
            waitFinished(t, {&req}, "large message", stop);
            if (copy == ShmCopy::kAuto) {
              expect(req.state.load() == Request::kDone, "not Done: " + req.error);
              if (rank == 1) expectPattern(buf, bytes, bytes, "through the mailbox");
            } else {
              expect(req.state.load() == Request::kFailed, "not Failed");
              oob.note(req.error);
            }
            oob.barrier(testDeadline());
          }
          barrierAndClose(t, oob);
        });
        INFO(joinErrors(outcomes));
        REQUIRE(joinErrors(outcomes).empty());
        if (copy == ShmCopy::kCma) {
          CHECK_THAT(outcomes[0].note,
                     Catch::StartsWith("rank 0: send to rank 1 (tag 0x186a0, 100000 bytes) "
                                       "failed: rank 1 withdrew the matching receive"));
          CHECK_THAT(outcomes[1].note,
                     Catch::StartsWith("rank 1: recv from rank 0 (tag 0x186a0, 100000 bytes) "
                                       "failed: process_vm_readv of 100000 bytes from rank 0") &&
                         Catch::EndsWith(std::string(std::strerror(err)) +
                                         " (CMA forced by the options)"));
        }
      }
    }
  }
}
