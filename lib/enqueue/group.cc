#include "lib/enqueue/group.hpp"

#include <optional>

#include "lib/base/error.hpp"

namespace weft {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<Submission> pending;
  std::optional<Error> poisoned;
};

GroupState& state() {
  thread_local GroupState s;
  return s;
}

}  // namespace

void groupStart() { ++state().depth; }

bool inGroup() { return state().depth > 0; }

void groupEnd() {
  GroupState& s = state();
  if (s.depth == 0) fail(weftInvalidUsage, "weftGroupEnd without a matching weftGroupStart");
  if (--s.depth > 0) return;
  std::vector<Submission> pending = std::move(s.pending);
  s.pending.clear();
  std::optional<Error> poisoned = std::move(s.poisoned);
  s.poisoned.reset();
  if (poisoned)
    throw Error(poisoned->result(),
                std::string("group not launched: an operation in it failed: ") + poisoned->what());
  launch(std::move(pending));
}

void submit(Submission submission) {
  GroupState& s = state();
  if (s.depth > 0)
    s.pending.push_back(std::move(submission));
  else if (!launchNative(submission))
    launch({std::move(submission)});
}

void poisonGroup(const Error& error) {
  GroupState& s = state();
  if (s.depth > 0 && !s.poisoned) s.poisoned = error;
}

}  // namespace weft
