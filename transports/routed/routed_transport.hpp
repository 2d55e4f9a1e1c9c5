// A transport that reaches each peer through one of several transports: in a communicator that
// spans hosts, peers on this host through weft's shared memory and the others through UCX.
// lib/comm chooses the route of every peer; this file only dispatches. See README.md.
#pragma once

#include <memory>
#include <vector>

#include "transports/transport.hpp"

namespace weft {

// How this rank reaches one peer: through ways[way], where the peer is called `peer` (the
// transports weft builds name peers by communicator rank; the loopback transports of a unit
// test number their own ranks from 0).
struct Route {
  int way = 0;
  int peer = 0;
};

// Takes ownership of `ways` (at least one) and reaches communicator rank r through
// routes[r]. Its name joins the ways' names ("shm+ucx"). Throws weftInternalError when a route
// names a way that does not exist.
std::unique_ptr<Transport> createRoutedTransport(std::vector<std::unique_ptr<Transport>> ways,
                                                 std::vector<Route> routes);

}  // namespace weft
