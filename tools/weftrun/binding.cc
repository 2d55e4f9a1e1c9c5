#include "tools/weftrun/binding.hpp"

#include <sched.h>

namespace weft::run {

std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<int> rankCpus(Binding binding, int nranks, const std::vector<int>& allowed) {
  if (binding != Binding::Core || allowed.empty() || nranks <= 0) return {};
  std::vector<int> cpus(static_cast<size_t>(nranks));
  for (size_t i = 0; i < cpus.size(); ++i) cpus[i] = allowed[i % allowed.size()];
  return cpus;
}

}  // namespace weft::run
