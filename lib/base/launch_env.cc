#include "lib/base/launch_env.hpp"

#include <array>

#include "lib/base/error.hpp"

namespace weft {
namespace {

constexpr std::array kLaunchVariables = {
    EnvVar{"WEFT_UNIQUE_ID", "(set by weftrun)",
           "the job's unique id, hex: weftCommInitFromEnv joins the communicator it names"},
    EnvVar{"WEFT_RANK", "(set by weftrun)", "this process's rank, for weftCommInitFromEnv"},
    EnvVar{"WEFT_NRANKS", "(set by weftrun)", "the number of ranks, for weftCommInitFromEnv"},
    EnvVar{"WEFT_LOCAL_RANK", "(set by weftrun)", "this process's rank among those on its host"},
    EnvVar{"WEFT_LOCAL_SIZE", "(set by weftrun)", "the number of ranks on this host"},
};

}  // namespace

std::span<const EnvVar> launchVariables() { return kLaunchVariables; }

LaunchEnv parseLaunchEnv(const std::function<const char*(const char*)>& get) {
  LaunchEnv out;
  auto integer = [&](const char* name, int64_t min) -> std::optional<int> {
    const char* v = get(name);
    if (v == nullptr || *v == 0) return std::nullopt;
    return static_cast<int>(parseInteger(name, v, min, (int64_t{1} << 31) - 1));
  };
  if (const char* v = get("WEFT_UNIQUE_ID"); v && *v) out.uniqueIdHex = v;
  out.rank = integer("WEFT_RANK", 0);
  out.nranks = integer("WEFT_NRANKS", 1);
  out.localRank = integer("WEFT_LOCAL_RANK", 0);
  out.localSize = integer("WEFT_LOCAL_SIZE", 1);
  return out;
}

}  // namespace weft
