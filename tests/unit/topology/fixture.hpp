// The fixtures of tests/fixtures, loaded once per test program (hwloc parsing is the slow part).
#pragma once

#include <map>
#include <string>

#include "lib/topology/discover.hpp"

namespace weft::testing {

inline std::string fixturePath(const std::string& name) {
  return std::string(WEFT_FIXTURES_DIR) + "/" + name;
}

inline const topology::Graph& fixture(const std::string& name) {
  static std::map<std::string, topology::Graph> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end())
    it = loaded.emplace(name, topology::discover({fixturePath(name), ""})).first;
  return it->second;
}

}  // namespace weft::testing
