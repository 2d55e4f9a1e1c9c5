// libFuzzer target: the bootstrap protocol as a stranger sees it. A root listens on loopback for
// the whole run; every input is sent to it on a fresh connection. The root must drop the
// connection and keep serving: after each input a real rank must still be able to join.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "lib/base/error.hpp"
#include "lib/bootstrap/bootstrap.hpp"
#include "lib/bootstrap/root.hpp"

namespace {

std::unique_ptr<weft::Root>& root() {
  static std::unique_ptr<weft::Root> r = [] {
    weft::RootOptions o;
    o.rounds = 0;  // serve every round of the run
    o.listenAddress = weft::SocketAddress::parse("127.0.0.1", 0);
    o.handshakeTimeoutMs = 200;
    return weft::startRoot(o);
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const weft::UniqueId& id = root()->id();
  const int fd = socket(id.root.family(), SOCK_STREAM, 0);
  if (fd < 0) return 0;
  if (connect(fd, id.root.get(), id.root.length()) == 0) {
    (void)!write(fd, data, size);
    shutdown(fd, SHUT_WR);
    char sink[256];
    timeval timeout{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    while (read(fd, sink, sizeof sink) > 0) {
    }
  }
  close(fd);
  // The stranger changed nothing: a one-rank job still forms on the same root.
  auto joined = weft::Bootstrap::connect(id, 0, 1, weft::Deadline::afterMs(10000));
  if (!joined || !root()->running()) std::abort();
  return 0;
}
