// What a launcher tells each rank through the environment: which rank it is, how many there
// are, and where to rendezvous. weftCommInitFromEnv reads it; the README's table lists every
// variable (launchVariables() are its rows).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>

#include "lib/base/env.hpp"

namespace weft {

// Read on every call: a process may start several communicators, and tests change the
// environment.
struct LaunchEnv {
  std::optional<std::string> uniqueIdHex;   // WEFT_UNIQUE_ID
  std::optional<int> rank, nranks;          // WEFT_RANK, WEFT_NRANKS
  std::optional<int> localRank, localSize;  // WEFT_LOCAL_RANK, WEFT_LOCAL_SIZE
};

// Throws weftInvalidArgument naming the variable when a value is malformed.
LaunchEnv parseLaunchEnv(const std::function<const char*(const char*)>& get);

std::span<const EnvVar> launchVariables();

// The integer in `text`, for variable `name`, in [min, max]; throws weftInvalidArgument naming
// the variable otherwise. (Shared with env.cc.)
int64_t parseInteger(const char* name, const char* text, int64_t min, int64_t max);

}  // namespace weft
