// A small dense simplex for the packing LPs of packing.cc: maximise c.x subject to A x <= b,
// x >= 0, with b >= 0 (so x = 0 is a feasible start). Rows are links (A[e][t]: the time tree t's
// unit of data keeps link e busy, b = 1) and, for allgather, one row per root that ties the
// roots' shares together. The optimum is a basic solution: at most one non-zero column per row,
// so the result needs few trees.
#pragma once

#include <vector>

namespace weft::topology {

// Returns x (one value per column). Dantzig's rule, Bland's rule after a run of degenerate
// pivots; stops after maxPivots pivots with the basis reached.
std::vector<double> maximize(const std::vector<std::vector<double>>& a,
                             const std::vector<double>& b, const std::vector<double>& c,
                             int maxPivots = 20000);

}  // namespace weft::topology
