// The per-communicator segment: created by the first local rank with mode 0600, mapped by all,
// unlinked before create() returns, and its mailboxes start zeroed and are shared.
#include <dirent.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <mutex>

#include "shm_test_util.hpp"
#include "support/thread_oob.hpp"
#include "transports/shm/mailbox.hpp"

using namespace weft;
using namespace weft::test;

namespace {

// Forwards to another OutOfBand; on the leader's second allGather (after it created the file
// and before it unlinks it) records the file's mode.
class ModeProbeOob final : public OutOfBand {
 public:
  ModeProbeOob(OutOfBand& inner, std::string path, int* mode)
      : inner_(inner), path_(std::move(path)), mode_(mode) {}
  int rank() const override { return inner_.rank(); }
  int nranks() const override { return inner_.nranks(); }
  std::vector<std::vector<uint8_t>> allGather(std::span<const uint8_t> mine,
                                              Deadline deadline) override {
    if (++calls_ == 2 && inner_.rank() == 0) {
      struct stat st {};
      *mode_ = stat(path_.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -errno;
    }
    return inner_.allGather(mine, deadline);
  }
  void barrier(Deadline deadline) override { inner_.barrier(deadline); }

 private:
  OutOfBand& inner_;
  std::string path_;
  int* mode_;
  int calls_ = 0;
};

std::vector<std::string> entriesStartingWith(const std::string& prefix) {
  std::vector<std::string> found;
  if (DIR* d = opendir("/dev/shm")) {
    while (const dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) found.push_back(e->d_name);
    }
    closedir(d);
  }
  return found;
}

}  // namespace

TEST_CASE("a segment for 1..8 local ranks is created 0600, shared, zeroed and unlinked at once") {
  for (int n = 1; n <= 8; ++n) {
    DYNAMIC_SECTION(n << " local ranks") {
      const std::string name = uniqueSegmentName();
      const std::string file = "weft-" + name + "-0";
      int mode = 0;
      std::vector<int> leftAfterCreate(static_cast<size_t>(n), -1);
      ThreadOobGroup group(n);
      auto errors = runRanks(group, [&](int rank, OutOfBand& inner) {
        ModeProbeOob oob(inner, "/dev/shm/" + file, &mode);
        LocalGroup g;
        for (int i = 0; i < n; ++i) g.ranks.push_back(i);
        g.pids.assign(static_cast<size_t>(n), getpid());
        g.me = rank;
        g.oneProcess = true;
        auto segment = ShmSegment::create(oob, g, name, SegmentGeometry::make(n, 4096, 16 << 10),
                                          testDeadline());
        // The leader unlinks before create() returns; the others may return first, so they
        // look once the leader has passed a barrier after create().
        if (rank != 0) oob.barrier(testDeadline());
        leftAfterCreate[rank] = static_cast<int>(entriesStartingWith(file).size());
        if (rank == 0) oob.barrier(testDeadline());
        const uint64_t bytes = segment->geometry().mailboxBytes;
        expect(bytes == 16 << 10, fmt::format("mailboxBytes {}", bytes));
        // Zeroed: every byte of every mailbox this rank receives in.
        for (int from = 0; from < n; ++from) {
          const uint8_t* box = segment->mailbox(from, rank);
          for (uint64_t i = 0; i < bytes; ++i) {
            expect(box[i] == 0, fmt::format("mailbox({}, {}) byte {} not zero", from, rank, i));
          }
        }
        oob.barrier(testDeadline());
        // Shared: each rank writes its mark at the start and end of its mailbox to every rank.
        for (int to = 0; to < n; ++to) {
          segment->mailbox(rank, to)[0] = static_cast<uint8_t>(rank + 1);
          segment->mailbox(rank, to)[bytes - 1] = static_cast<uint8_t>(to + 1);
        }
        oob.barrier(testDeadline());
        for (int from = 0; from < n; ++from) {
          const uint8_t* box = segment->mailbox(from, rank);
          expect(box[0] == from + 1 && box[bytes - 1] == rank + 1,
                 fmt::format("rank {} does not see what rank {} wrote", rank, from));
        }
        oob.barrier(testDeadline());
      });
      INFO(joinErrors(errors));
      REQUIRE(joinErrors(errors).empty());
      CHECK(mode == 0600);
      for (int r = 0; r < n; ++r) CHECK(leftAfterCreate[r] == 0);
      CHECK(entriesStartingWith("weft-" + name).empty());
    }
  }
}

TEST_CASE("ranks that size the slots differently get an error naming both layouts") {
  // As with WEFT_SHM_SLOT_BYTES set differently on two ranks: rank 1 asks for larger slots.
  const std::string name = uniqueSegmentName();
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    LocalGroup g;
    g.ranks = {0, 1};
    g.pids.assign(2, getpid());
    g.me = rank;
    g.oneProcess = true;
    const uint64_t slot = rank == 0 ? 4096 : 65536;
    ShmSegment::create(oob, g, name, SegmentGeometry::make(2, slot, 16 << 10), testDeadline());
  });
  // Every rank fails, rank 0 included (it learns of rank 1's failure in the same exchange).
  REQUIRE(errors.size() == 2);
  for (const std::string& e : errors) {
    INFO(e);
    CHECK(e.find("rank 1 could not map the shared-memory segment") != std::string::npos);
    CHECK(e.find("slots of 4096 bytes") != std::string::npos);
    CHECK(e.find("expected 2, 65536 and 16384") != std::string::npos);
    CHECK(e.find("WEFT_SHM_SLOT_BYTES") != std::string::npos);
  }
  CHECK(entriesStartingWith("weft-" + name).empty());
}

TEST_CASE("the mailbox layout leaves room for both rings and clamps the eager limit") {
  using shm::MailboxLayout;
  CHECK_THROWS_AS(MailboxLayout::make(8 << 10, 8192), Error);
  const MailboxLayout small = MailboxLayout::make(MailboxLayout::kMinBytes, 8192);
  CHECK(small.recordsBytes == 4096);
  CHECK(small.dataBytes >= 4096);
  CHECK(small.eagerLimit <= small.recordsBytes / 4);
  for (uint64_t bytes : {uint64_t{32} << 10, uint64_t{256} << 10, uint64_t{1} << 20}) {
    const MailboxLayout l = MailboxLayout::make(bytes, 8192);
    INFO(bytes);
    CHECK((l.recordsBytes & (l.recordsBytes - 1)) == 0);
    CHECK((l.dataBytes & (l.dataBytes - 1)) == 0);
    CHECK(l.recordsOffset >= sizeof(shm::MailboxControl));
    CHECK(l.dataOffset + l.dataBytes <= bytes);
    CHECK(l.recordsOffset + l.recordsBytes <= l.dataOffset);
    CHECK(shm::recordBytesFor(l.eagerLimit) <= l.recordsBytes / 4);
  }
  CHECK(MailboxLayout::make(256 << 10, 8192).eagerLimit == 8192);
  CHECK(defaultMailboxBytes(2) == 256 << 10);
  CHECK(defaultMailboxBytes(64) == 32 << 10);
}
