#include "lib/tuner/algo_selection.hpp"

#include <cctype>
#include <vector>

#include "lib/base/error.hpp"

namespace weft {
namespace {

constexpr Collective kTunable[] = {
    Collective::AllReduce,     Collective::Broadcast, Collective::Reduce, Collective::AllGather,
    Collective::ReduceScatter, Collective::AlltoAll,  Collective::Gather, Collective::Scatter};

std::string normalized(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-' && c != ' ' && c != '\t')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    parts.push_back(
        s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

std::string lowerName(Collective c) {
  return normalized(collectiveName(c));
}

// "ring, tree, ..., native" for error messages.
std::string choices(Collective c) {
  std::string out;
  for (const Algorithm& a : algorithmRegistry())
    if (a.serves(c)) out += std::string(out.empty() ? "" : ", ") + a.name;
  return out + ", native";
}

const Algorithm* byName(std::string_view name) {
  for (const Algorithm& a : algorithmRegistry())
    if (name == a.name) return &a;
  return nullptr;
}

}  // namespace

bool parseCollectiveName(std::string_view text, Collective& out) {
  const std::string want = normalized(text);
  for (Collective c : kTunable)
    if (want == lowerName(c)) {
      out = c;
      return true;
    }
  return false;
}

std::string AlgoSelection::describe(Collective c) const {
  std::string out;
  for (const Algorithm& a : algorithmRegistry())
    if (allows(c, a)) out += std::string(out.empty() ? "" : ", ") + a.name;
  if (allowsNative(c)) out += std::string(out.empty() ? "" : ", ") + "native";
  return out.empty() ? "(none)" : out;
}

AlgoSelection parseAlgoSelection(std::string_view text) {
  AlgoSelection selection;
  const std::string whole(text);
  auto bad = [&](const std::string& why) {
    fail(weftInvalidArgument, "WEFT_ALGO='{}': {}", whole, why);
  };
  if (trim(text).empty()) return selection;
  for (std::string_view clause : split(text, ';')) {
    clause = trim(clause);
    if (clause.empty()) continue;  // "allreduce:ring;" is fine
    std::vector<Collective> targets;
    const size_t colon = clause.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view name = trim(clause.substr(0, colon));
      Collective c;
      if (!parseCollectiveName(name, c))
        bad(
            fmt::format("unknown collective '{}' (allreduce, broadcast, reduce, allgather, "
                        "reducescatter, alltoall, gather, scatter)",
                        name));
      targets.push_back(c);
      clause = trim(clause.substr(colon + 1));
    }
    const bool exclude = !clause.empty() && clause.front() == '^';
    if (exclude) clause = trim(clause.substr(1));
    // The names, checked against the registry (and the clause's collective, if any).
    uint32_t named = 0;
    bool native = false;
    for (std::string_view token : split(clause, ',')) {
      token = trim(token);
      if (token.empty()) bad("an empty algorithm name (stray ',' or nothing after ':')");
      std::string name(token);  // names are matched in any case
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (name == "native") {
        native = true;
        continue;
      }
      const Algorithm* a = byName(name);
      if (!a && targets.empty())
        bad(fmt::format("unknown algorithm '{}' (weft-topo --algorithms lists them)", token));
      if (!targets.empty() && (!a || !a->serves(targets[0])))
        bad(fmt::format("'{}' is not an algorithm for {} ({})", token, lowerName(targets[0]),
                        choices(targets[0])));
      named |= 1u << static_cast<int>(a->id);
    }
    if (targets.empty()) {
      for (Collective c : kTunable) {
        bool serves = native;
        for (const Algorithm& a : algorithmRegistry())
          if (a.serves(c) && ((named >> static_cast<int>(a.id)) & 1u)) serves = true;
        if (exclude || serves) targets.push_back(c);
      }
    }
    for (Collective c : targets) {
      AlgoSelection::Allowed& allowed = selection.collectives[static_cast<int>(c)];
      if (exclude) {
        allowed.algorithms &= ~named;
        if (native) allowed.native = false;
      } else {
        allowed.algorithms = named;
        allowed.native = native;
      }
      bool any = allowed.native;
      for (const Algorithm& a : algorithmRegistry()) any |= selection.allows(c, a);
      if (!any) bad(fmt::format("nothing is left for {}", lowerName(c)));
    }
  }
  return selection;
}

}  // namespace weft
