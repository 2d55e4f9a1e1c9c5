// libFuzzer target: every WEFT_* (and launcher) variable. The input is split at NUL bytes into
// values for the variables of the table, in order; parsing must accept or throw weft::Error.
#include <string>
#include <vector>

#include "lib/base/env.hpp"
#include "lib/base/error.hpp"
#include "lib/base/launch_env.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft;
  static const std::vector<EnvVar> variables = envVariables();
  std::vector<std::string> values(variables.size());
  size_t v = 0;
  for (size_t i = 0; i < size && v < values.size(); ++i) {
    if (data[i] == 0)
      ++v;
    else
      values[v] += static_cast<char>(data[i]);
  }
  auto get = [&](const char* name) -> const char* {
    for (size_t i = 0; i < variables.size(); ++i)
      if (std::string(variables[i].name) == name) return values[i].empty() ? nullptr : values[i].c_str();
    return nullptr;
  };
  try {
    (void)parseEnv(get);
  } catch (const Error&) {
  }
  try {
    (void)parseLaunchEnv(get);
  } catch (const Error&) {
  }
  return 0;
}
