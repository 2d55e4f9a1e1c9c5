#include "lib/bootstrap/root.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include "lib/base/log.hpp"
#include "lib/bootstrap/interface.hpp"
#include "lib/bootstrap/root_loop.hpp"

namespace weft {

std::unique_ptr<Root> startRoot(const RootOptions& options) {
  ensureSodium();
  auto state = std::make_shared<RootState>();
  state->options = options;
  const SocketAddress address =
      options.listenAddress.empty() ? bootstrapListenAddress() : options.listenAddress;
  state->listener = listenOn(address);
  state->id.root = localAddress(state->listener.get());
  randomBytes(state->id.secret);
  state->wake = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!state->wake.valid()) failErrno(errno, "bootstrap root: eventfd");
  WEFT_INFO(kSubsysBoot, "bootstrap root listening at {} ({} rounds)", state->id.root.toString(),
            options.rounds == 0 ? std::string("unlimited") : std::to_string(options.rounds));
  std::unique_ptr<Root> root(new Root());
  root->state_ = state;
  root->thread_ = std::thread([state] { serveRoot(state); });
  return root;
}

Root::~Root() {
  if (!thread_.joinable()) return;
  stop();
  thread_.join();
}

const UniqueId& Root::id() const {
  return state_->id;
}

void Root::stop() {
  state_->stopRequested.store(true, std::memory_order_release);
  const uint64_t one = 1;
  (void)!::write(state_->wake.get(), &one, sizeof one);
}

bool Root::running() const {
  std::lock_guard lock(state_->mutex);
  return state_->running;
}

int Root::roundsServed() const {
  std::lock_guard lock(state_->mutex);
  return state_->roundsServed;
}

std::vector<JoinedRank> Root::joined() const {
  std::lock_guard lock(state_->mutex);
  return state_->joined;
}

namespace {

// Waits under the state's lock until `done` holds or the deadline; returns `done`'s value.
template <typename Done>
bool waitUntil(RootState& state, Deadline deadline, const Done& done) {
  std::unique_lock lock(state.mutex);
  // wait_until(time_point::max()) overflows in some standard libraries: wait without a limit.
  if (deadline.at() == Clock::time_point::max())
    state.changed.wait(lock, done);
  else
    state.changed.wait_until(lock, deadline.at(), done);
  return done();
}

}  // namespace

bool Root::waitForJoined(int count, Deadline deadline) const {
  bool joined = false;
  waitUntil(*state_, deadline, [&] {
    joined = static_cast<int>(state_->joined.size()) >= count;
    return joined || !state_->running;
  });
  return joined;
}

bool Root::waitFinished(Deadline deadline) const {
  return waitUntil(*state_, deadline, [&] { return !state_->running; });
}

void Root::detach() {
  if (thread_.joinable()) thread_.detach();
}

}  // namespace weft
