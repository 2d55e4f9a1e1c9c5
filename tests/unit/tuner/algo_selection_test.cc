// WEFT_ALGO reads like NCCL_ALGO: per-collective lists, '^' to exclude, and a bad string is an
// error that names the bad token.
#include "lib/tuner/algo_selection.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "lib/base/error.hpp"

using namespace weft;

namespace {

bool allows(const AlgoSelection& s, Collective c, const char* name) {
  const Algorithm* a = findAlgorithm(c, name);
  REQUIRE(a != nullptr);
  return s.allows(c, *a);
}

// The message of the error parseAlgoSelection throws for `text` (and that it is InvalidArgument).
std::string errorFor(const char* text) {
  try {
    parseAlgoSelection(text);
  } catch (const Error& e) {
    CHECK(e.result() == weftInvalidArgument);
    return e.what();
  }
  FAIL("WEFT_ALGO='" << text << "' was accepted");
  return {};
}

}  // namespace

TEST_CASE("an empty WEFT_ALGO allows every algorithm and the native path everywhere") {
  const AlgoSelection s = parseAlgoSelection("");
  for (const Algorithm& a : algorithmRegistry())
    for (int c = 0; c < kNumCollectives; ++c)
      if (a.serves(static_cast<Collective>(c))) CHECK(s.allows(static_cast<Collective>(c), a));
  CHECK(s.allowsNative(Collective::AllReduce));
}

TEST_CASE("per-collective lists restrict only their collective and rule the native path out") {
  const AlgoSelection s = parseAlgoSelection("allreduce:ring,tree;broadcast:chain");
  CHECK(allows(s, Collective::AllReduce, "ring"));
  CHECK(allows(s, Collective::AllReduce, "tree"));
  CHECK_FALSE(allows(s, Collective::AllReduce, "halving-doubling"));
  CHECK_FALSE(allows(s, Collective::AllReduce, "recursive-doubling"));
  CHECK_FALSE(s.allowsNative(Collective::AllReduce));
  CHECK(allows(s, Collective::Broadcast, "chain"));
  CHECK_FALSE(allows(s, Collective::Broadcast, "tree"));
  CHECK_FALSE(s.allowsNative(Collective::Broadcast));
  // Untouched collectives keep everything.
  CHECK(allows(s, Collective::Reduce, "tree"));
  CHECK(allows(s, Collective::AllGather, "bruck"));
  CHECK(s.allowsNative(Collective::Reduce));
}

TEST_CASE("a caret excludes, keeping the native path unless it is named") {
  const AlgoSelection s = parseAlgoSelection("allreduce:^ring,tree");
  CHECK_FALSE(allows(s, Collective::AllReduce, "ring"));
  CHECK_FALSE(allows(s, Collective::AllReduce, "tree"));
  CHECK(allows(s, Collective::AllReduce, "halving-doubling"));
  CHECK(s.allowsNative(Collective::AllReduce));
  CHECK_FALSE(parseAlgoSelection("allreduce:^native").allowsNative(Collective::AllReduce));
}

TEST_CASE("a clause without a collective applies to every collective its names serve") {
  const AlgoSelection s = parseAlgoSelection("ring");
  CHECK(allows(s, Collective::AllReduce, "ring"));
  CHECK_FALSE(allows(s, Collective::AllReduce, "tree"));
  CHECK(allows(s, Collective::AllGather, "ring"));
  CHECK_FALSE(allows(s, Collective::AllGather, "bruck"));
  CHECK_FALSE(s.allowsNative(Collective::AllGather));
  // Broadcast is not served by ring: left alone.
  CHECK(allows(s, Collective::Broadcast, "tree"));
  CHECK(s.allowsNative(Collective::Broadcast));
  const AlgoSelection x = parseAlgoSelection("^bruck");
  CHECK_FALSE(allows(x, Collective::AllGather, "bruck"));
  CHECK_FALSE(allows(x, Collective::AlltoAll, "bruck"));
  CHECK(allows(x, Collective::AlltoAll, "pairwise"));
}

TEST_CASE("collective names take NCCL's and weft's spellings, any case, clauses apply in order") {
  const AlgoSelection s =
      parseAlgoSelection(" All_Reduce : Ring ; reduce-scatter:halving-doubling ; allreduce:tree ");
  CHECK_FALSE(allows(s, Collective::AllReduce, "ring"));
  CHECK(allows(s, Collective::AllReduce, "tree"));
  CHECK(allows(s, Collective::ReduceScatter, "halving-doubling"));
  CHECK_FALSE(allows(s, Collective::ReduceScatter, "ring"));
}

TEST_CASE("bad WEFT_ALGO strings are errors naming the bad token") {
  CHECK_THAT(errorFor("allreduce:rnig"), Catch::Contains("'rnig'") && Catch::Contains("WEFT_ALGO"));
  CHECK_THAT(errorFor("allredcue:ring"), Catch::Contains("'allredcue'"));
  CHECK_THAT(errorFor("broadcast:ring"),
             Catch::Contains("'ring'") && Catch::Contains("not an algorithm for broadcast"));
  CHECK_THAT(errorFor("nosuch"), Catch::Contains("'nosuch'"));
  CHECK_THAT(errorFor("allreduce:ring,,tree"), Catch::Contains("empty"));
  CHECK_THAT(errorFor("allreduce:"), Catch::Contains("empty"));
  CHECK_THAT(errorFor("gather:^direct,binomial,native"), Catch::Contains("nothing is left"));
}
