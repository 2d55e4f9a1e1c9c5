#include "lib/bootstrap/host_id.hpp"

#include <unistd.h>

#include <array>
#include <fstream>
#include <optional>

#include "lib/base/env.hpp"
#include "lib/base/log.hpp"
#include "lib/bootstrap/handshake.hpp"

namespace weft {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ')) s.remove_prefix(1);
  return s;
}

std::optional<std::string> readBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string line;
  if (!in || !std::getline(in, line) || trim(line).empty()) return std::nullopt;
  return std::string(trim(line));
}

std::optional<std::string> readIpcNamespace() {
  char buf[256];
  ssize_t n = ::readlink("/proc/self/ns/ipc", buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

std::string hostIdentityFrom(std::string_view bootId, std::string_view ipcNamespace) {
  return std::string(trim(bootId)) + "/" + std::string(trim(ipcNamespace));
}

std::string hostIdentityOverride(std::string_view value) {
  return "WEFT_HOST_ID:" + std::string(value);
}

const std::string& hostIdentity() {
  static const std::string identity = [] {
    if (const std::string& forced = envOrDefaults().hostId; !forced.empty()) {
      WEFT_INFO(kSubsysBoot, "bootstrap: host identity from WEFT_HOST_ID='{}'", forced);
      return hostIdentityOverride(forced);
    }
    const auto bootId = readBootId();
    const auto ipc = readIpcNamespace();
    if (bootId && ipc) return hostIdentityFrom(*bootId, *ipc);
    std::array<uint8_t, 16> random;
    randomBytes(random);
    std::string alone = "alone:" + toHex(random);
    WEFT_WARN(kSubsysBoot,
              "bootstrap: cannot read {}; this process will not share memory with others ({})",
              bootId ? "/proc/self/ns/ipc" : "/proc/sys/kernel/random/boot_id", alone);
    return alone;
  }();
  return identity;
}

}  // namespace weft
