// weftrun's command line: what to launch and how to supervise it.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace weft::run {

// Where ranks may run: Core binds rank i to the i-th of weftrun's CPUs (round-robin), None
// leaves every rank weftrun's own mask.
enum class Binding { Core, None };

struct LaunchOptions {
  int nranks = 0;
  Binding bindTo = Binding::None;
  bool tagOutput = false;  // prefix every line of a rank's stdout/stderr with "[rank] "
  bool keepGoing = false;  // let the other ranks run on when one fails
  std::optional<double> timeoutSeconds;
  std::string timeoutText;        // as the user wrote it, for messages ("30")
  std::string program;            // as the user wrote it, for messages
  std::string programPath;        // resolved through PATH, checked executable
  std::vector<std::string> args;  // argv[0] included (the program as written)
  bool help = false;              // --help: print usage and exit 0
};

// Bad usage: the message says what is wrong (main prints it with the usage hint, exit 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses argv (argv[0] is weftrun itself) and resolves the program. Throws UsageError.
LaunchOptions parseOptions(int argc, const char* const* argv);

// Resolves `program` like execvp does (a name without '/' is searched in PATH) and checks that
// the result is an executable regular file. Throws UsageError naming the program.
std::string resolveProgram(const std::string& program, const char* path);

std::string usageText();

}  // namespace weft::run
