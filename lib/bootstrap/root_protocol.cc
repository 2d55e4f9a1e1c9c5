#include "lib/bootstrap/root_protocol.hpp"

#include "lib/bootstrap/frame.hpp"

namespace weft {
namespace {

void writeInfo(WireWriter& w, const RankInfo& info) {
  w.address(info.address);
  w.u64(static_cast<uint64_t>(info.pid));
  w.string(info.hostId);
}

RankInfo readInfo(WireReader& r) {
  RankInfo info;
  info.address = r.address();
  info.pid = static_cast<int64_t>(r.u64());
  info.hostId = r.string(kMaxHostIdBytes);
  return info;
}

}  // namespace

std::vector<uint8_t> encodeHello(const Hello& hello) {
  WireWriter w;
  w.u32(static_cast<uint32_t>(hello.rank));
  w.u32(static_cast<uint32_t>(hello.nranks));
  w.u32(hello.waitMs);
  writeInfo(w, hello.info);
  return std::move(w.data());
}

Hello decodeHello(std::span<const uint8_t> payload, std::string_view peer) {
  WireReader r(payload, fmt::format("hello from {}", peer));
  Hello hello;
  hello.rank = static_cast<int32_t>(r.u32());
  hello.nranks = static_cast<int32_t>(r.u32());
  hello.waitMs = r.u32();
  hello.info = readInfo(r);
  r.expectEnd();
  return hello;
}

std::vector<uint8_t> encodeTable(const RankTable& table) {
  WireWriter w;
  w.bytes(table.commId);
  w.u32(static_cast<uint32_t>(table.ranks.size()));
  for (const RankInfo& info : table.ranks) writeInfo(w, info);
  return std::move(w.data());
}

RankTable decodeTable(std::span<const uint8_t> payload, std::string_view peer) {
  WireReader r(payload, fmt::format("rank table from {}", peer));
  RankTable table;
  r.bytes(table.commId);
  const uint32_t nranks = r.u32();
  if (nranks < 1 || nranks > static_cast<uint32_t>(kMaxRanks))
    r.malformed(fmt::format("{} ranks", nranks));
  table.ranks.reserve(nranks);
  for (uint32_t i = 0; i < nranks; ++i) table.ranks.push_back(readInfo(r));
  r.expectEnd();
  return table;
}

std::vector<uint8_t> encodeErrorMessage(weftResult_t result, std::string_view message) {
  WireWriter w;
  w.u32(static_cast<uint32_t>(result));
  w.string(message.substr(0, kMaxMessageBytes));
  return std::move(w.data());
}

std::string formatRanks(std::span<const int> ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i > 0) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace weft
