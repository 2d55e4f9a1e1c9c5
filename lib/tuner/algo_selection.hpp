// WEFT_ALGO: which algorithms the tuner may choose from, per collective, in NCCL_ALGO's shape.
//
//   WEFT_ALGO := clause (';' clause)*
//   clause    := [collective ':'] ['^'] name (',' name)*
//   collective: allreduce broadcast reduce allgather reducescatter alltoall gather scatter
//               (any case; '_' and '-' are ignored, so all_reduce and reduce-scatter work too)
//   name      : a registry name (weft-topo --algorithms, any case) or `native` (the shared-memory
//               collectives of single-host communicators)
//
// A clause with a collective sets that collective's choice: the names listed, or with `^` every
// algorithm except those listed. A clause without one applies to every collective that at least
// one of its names serves (`ring` restricts allreduce, allgather and reduce-scatter and leaves
// broadcast alone). Clauses apply left to right. A list that does not name `native` rules the
// native path out, so `WEFT_ALGO=ring` runs ring schedules over the transport even on one host;
// an exclusion keeps it unless it says `^native`. Unknown collectives or names, names that do
// not serve the clause's collective, and exclusions that leave nothing are errors.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "algorithms/algorithm.hpp"

namespace weft {

struct AlgoSelection {
  struct Allowed {
    bool native = true;
    uint32_t algorithms = ~0u;  // bit (1 << AlgorithmId)
  };
  std::array<Allowed, kNumCollectives> collectives{};

  bool allows(Collective c, const Algorithm& a) const {
    return a.serves(c) &&
           ((collectives[static_cast<int>(c)].algorithms >> static_cast<int>(a.id)) & 1u);
  }
  bool allowsNative(Collective c) const { return collectives[static_cast<int>(c)].native; }
  // "ring, tree (native too)" for one collective.
  std::string describe(Collective c) const;
};

// Throws Error(weftInvalidArgument) naming WEFT_ALGO and the bad token.
AlgoSelection parseAlgoSelection(std::string_view text);

// "allreduce" -> AllReduce (the spellings above); false when unknown.
bool parseCollectiveName(std::string_view text, Collective& out);

}  // namespace weft
