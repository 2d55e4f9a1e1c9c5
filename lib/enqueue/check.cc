#include "lib/enqueue/check.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "algorithms/algorithm.hpp"
#include "lib/base/error.hpp"
#include "lib/comm/comm.hpp"
#include "lib/enqueue/tags.hpp"

namespace weft {
namespace {

// The fixed-size record a rank sends: the number of collectives it is about to run, a hash of
// all of them, and the first one in full (enough to say what each rank called).
struct Record {
  uint32_t magic;
  uint32_t collectives;
  uint64_t firstSeq;
  uint64_t hash;
  uint64_t count;
  int32_t op;
  int32_t root;
  uint8_t collective;
  uint8_t datatype;
};
static_assert(sizeof(Record) <= ConsistencyCheck::kRecordBytes);
constexpr uint32_t kMagic = 0x57434b31;  // "WCK1"

uint64_t mixIn(uint64_t h, uint64_t v) {  // FNV-1a over 64-bit words
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  return h;
}

std::string describeRecord(const Record& r) {
  if (r.magic != kMagic) return "(no valid record)";
  Operation op;
  op.collective = static_cast<Collective>(r.collective);
  op.count = r.count;
  op.datatype = static_cast<weftDataType_t>(r.datatype);
  op.op = static_cast<weftRedOp_t>(r.op);
  op.root = r.root;
  std::string s = fmt::format("{} #{}", describe(op), r.firstSeq);
  if (r.collectives > 1) s += fmt::format(" and {} more in the same group", r.collectives - 1);
  return s;
}

}  // namespace

ConsistencyCheck::ConsistencyCheck(Comm& comm, const std::vector<Operation>& collectives,
                                   const std::vector<uint64_t>& seqs)
    : comm_(comm) {
  Record r{};
  r.magic = kMagic;
  r.collectives = static_cast<uint32_t>(collectives.size());
  r.firstSeq = seqs.front();
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < collectives.size(); ++i) {
    const Operation& o = collectives[i];
    for (uint64_t v : {uint64_t(o.collective), o.count, uint64_t(o.datatype), uint64_t(o.op),
                       uint64_t(o.root), seqs[i]})
      h = mixIn(h, v);
  }
  r.hash = h;
  r.count = collectives.front().count;
  r.op = collectives.front().op;
  r.root = collectives.front().root;
  r.collective = static_cast<uint8_t>(collectives.front().collective);
  r.datatype = static_cast<uint8_t>(collectives.front().datatype);
  std::memcpy(mine_.data(), &r, sizeof r);

  const int n = comm.nranks();
  all_.assign(size_t(n) * kRecordBytes, 0);
  CollectiveShape shape;
  shape.collective = Collective::AllGather;
  shape.nranks = n;
  shape.rank = comm.rank();
  shape.count = kRecordBytes;
  shape.elemSize = 1;
  shape.chunkBytes = kRecordBytes;
  schedule_ = buildRing(shape);
  Work w;
  w.schedule = &schedule_;
  w.buffers = {mine_.data(), all_.data(), nullptr};
  w.tagBase = ((r.firstSeq & kCollectiveSeqMask) << kMessageBits) | kCheckIndex;
  w.name = {nullptr, nullptr, "WEFT_CHECK: comparing operations"};
  ExecutionContext context;
  context.rank = comm.rank();
  context.deadline = comm.deadline();
  context.timeoutMs = comm.config().timeoutMs;
  context.abortFlag = comm.abortFlag();
  execution_ = std::make_unique<Execution>(comm.transport(), std::vector<Work>{w}, context);
}

ConsistencyCheck::~ConsistencyCheck() = default;

void ConsistencyCheck::verify() const {
  const int n = comm_.nranks();
  std::vector<Record> records(n);
  for (int q = 0; q < n; ++q) std::memcpy(&records[q], all_.data() + size_t(q) * kRecordBytes, sizeof(Record));
  auto same = [](const Record& a, const Record& b) {
    return a.magic == b.magic && a.collectives == b.collectives && a.firstSeq == b.firstSeq &&
           a.hash == b.hash;
  };
  bool agree = true;
  for (int q = 1; q < n; ++q) agree &= same(records[q], records[0]);
  if (agree) return;
  // Group the ranks by what they called.
  std::vector<std::pair<std::vector<int>, Record>> groups;
  for (int q = 0; q < n; ++q) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return same(g.second, records[q]); });
    if (it == groups.end())
      groups.push_back({{q}, records[q]});
    else
      it->first.push_back(q);
  }
  std::string detail;
  for (const auto& [ranks, record] : groups)
    detail += fmt::format("{}{} {} called {}", detail.empty() ? "" : "; ",
                          ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "),
                          describeRecord(record));
  fail(weftInvalidUsage, "{}: WEFT_CHECK: the ranks disagree on the operation to run: {}",
       comm_.label(), detail);
}

}  // namespace weft
