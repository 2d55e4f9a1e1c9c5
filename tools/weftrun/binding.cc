#include "tools/weftrun/binding.hpp"

namespace weft::run {

std::vector<int> rankCpus(Binding binding, int nranks, const std::vector<int>& allowed) {
  if (binding != Binding::Core || allowed.empty() || nranks <= 0) return {};
  std::vector<int> cpus(static_cast<size_t>(nranks));
  for (size_t i = 0; i < cpus.size(); ++i) cpus[i] = allowed[i % allowed.size()];
  return cpus;
}

}  // namespace weft::run
