// weftrun: starts N ranks of a program on this host as one weft job and supervises them.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>

#include "lib/bootstrap/root.hpp"
#include "tools/weftrun/job.hpp"
#include "tools/weftrun/options.hpp"

extern char** environ;

namespace {

// A closed stdin/stdout/stderr would let the next pipe take its number, and a rank's dup2 of
// that pipe onto itself would keep it close-on-exec.
void openStandardStreams() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0) ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
}

}  // namespace

int main(int argc, char** argv) {
  openStandardStreams();
  weft::run::LaunchOptions options;
  try {
    options = weft::run::parseOptions(argc, argv);
  } catch (const weft::run::UsageError& e) {
    fmt::print(stderr, "weftrun: {}\nTry 'weftrun --help' for more information.\n", e.what());
    return 2;
  }
  if (options.help) {
    fmt::print("{}", weft::run::usageText());
    return 0;
  }

  // Before any thread exists, so that these signals reach weftrun only through its signalfd
  // (the rendezvous thread inherits the mask). A reader gone from our stdout must not kill us
  // while ranks run: writes fail with EPIPE instead.
  const sigset_t supervised = weft::run::supervisedSignals();
  ::sigprocmask(SIG_BLOCK, &supervised, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<weft::Root> root;
  try {
    weft::RootOptions rootOptions;
    rootOptions.rounds = 0;  // unlimited: a job may create several communicators
    root = weft::startRoot(rootOptions);
  } catch (const std::exception& e) {
    fmt::print(stderr, "weftrun: cannot start the rendezvous root: {}\n", e.what());
    return 1;
  }

  int code = 1;
  try {
    code = weft::run::runJob(options, root->id().toHex(), environ);
  } catch (const std::exception& e) {
    fmt::print(stderr, "weftrun: {}\n", e.what());
  }
  root->stop();
  return code;
}
