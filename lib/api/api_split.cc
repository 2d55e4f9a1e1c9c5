// New communicators from existing ones: weftCommSplit and weftCommShrink.
#include <span>

#include "lib/api/handles.hpp"
#include "lib/comm/comm.hpp"
#include "lib/comm/split.hpp"
#include "lib/enqueue/group.hpp"

using namespace weft;

namespace {

// A handle for a communicator made from another (already initialised, blocking).
weftComm_t adopt(std::shared_ptr<Comm> comm, std::shared_ptr<std::atomic<bool>> abortFlag) {
  auto* h = new weftComm;
  h->rank = comm->rank();
  h->nranks = comm->nranks();
  h->abortFlag = std::move(abortFlag);
  h->comm = std::move(comm);
  api::registerComm(h);
  return h;
}

// The child's configuration: the caller's, or else the parent's.
CommConfig childConfig(const weftConfig_t* config, const Comm& parent) {
  if (config == nullptr) return parent.config();
  CommConfig c = resolveConfig(config);
  if (!c.blocking)
    fail(weftInvalidArgument,
         "config.blocking=0: weftCommSplit and weftCommShrink complete before they return");
  return c;
}

}  // namespace

extern "C" {

weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm,
                           weftConfig_t* config) {
  return api::guard("weftCommSplit", comm, [&] {
    if (newcomm == nullptr) fail(weftInvalidArgument, "newcomm (the output pointer) is NULL");
    if (inGroup()) fail(weftInvalidUsage, "weftCommSplit inside a group");
    if (color < WEFT_SPLIT_NOCOLOR)
      fail(weftInvalidArgument, "color={}: must be >= 0, or WEFT_SPLIT_NOCOLOR", color);
    std::shared_ptr<Comm> parent = api::readyComm(comm);
    auto abortFlag = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<Comm> child =
        splitComm(*parent, color, key, childConfig(config, *parent), abortFlag);
    *newcomm = child ? adopt(std::move(child), std::move(abortFlag)) : nullptr;
  });
}

weftResult_t weftCommShrink(weftComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            weftComm_t* newcomm, weftConfig_t* config, int shrinkFlags) {
  return api::guard("weftCommShrink", comm, [&] {
    if (newcomm == nullptr) fail(weftInvalidArgument, "newcomm (the output pointer) is NULL");
    if (inGroup()) fail(weftInvalidUsage, "weftCommShrink inside a group");
    if (excludeRanksCount < 0)
      fail(weftInvalidArgument, "excludeRanksCount={}: must be >= 0", excludeRanksCount);
    if (excludeRanksCount > 0 && excludeRanksList == nullptr)
      fail(weftInvalidArgument, "excludeRanksList is NULL with excludeRanksCount={}",
           excludeRanksCount);
    if (shrinkFlags != WEFT_SHRINK_DEFAULT && shrinkFlags != WEFT_SHRINK_ABORT)
      fail(weftInvalidArgument, "shrinkFlags={}: expected WEFT_SHRINK_DEFAULT or "
           "WEFT_SHRINK_ABORT", shrinkFlags);
    // The parent may have failed: take it as it is (readyComm would refuse a failed one only
    // through checkUsable, which shrink does not call).
    std::shared_ptr<Comm> parent = api::readyComm(comm);
    auto abortFlag = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<Comm> child = shrinkComm(
        *parent, std::span<const int>(excludeRanksList, excludeRanksCount),
        shrinkFlags == WEFT_SHRINK_ABORT, childConfig(config, *parent), abortFlag);
    *newcomm = adopt(std::move(child), std::move(abortFlag));
  });
}

}  // extern "C"
