// A small dense simplex for the packing LPs of packing.cc: maximise sum(x) subject to
// A x <= 1, x >= 0, with A non-negative (rows: links, columns: candidate trees; A[e][t] is the
// time tree t's unit of data keeps link e busy). The optimum is a basic solution: at most one
// non-zero column per row, so the result needs few trees.
#pragma once

#include <vector>

namespace weft::topology {

// a[row][column] >= 0. Returns x (one value per column). Dantzig's rule, Bland's rule after
// a run of degenerate pivots; stops after maxPivots pivots with the best basis so far.
std::vector<double> maximizeSumSubjectToUnitRows(const std::vector<std::vector<double>>& a,
                                                 int maxPivots = 5000);

}  // namespace weft::topology
