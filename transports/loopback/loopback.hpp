// The loopback transport: ranks of one process exchange messages through memory. Unit tests run
// every schedule over it, in one thread or several.
#pragma once

#include <memory>
#include <vector>

#include "transports/transport.hpp"

namespace weft {

// n connected transports, one per rank; they share a fabric that lives as long as any of them.
std::vector<std::unique_ptr<Transport>> createLoopbackTransports(int nranks);

}  // namespace weft
