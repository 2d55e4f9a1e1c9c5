#include "lib/topology/simplex.hpp"

#include <cmath>

namespace weft::topology {

std::vector<double> maximize(const std::vector<std::vector<double>>& a,
                             const std::vector<double>& b, const std::vector<double>& c,
                             int maxPivots) {
  const size_t m = a.size();
  const size_t n = c.size();
  constexpr double kEps = 1e-12;
  // Tableau: m rows of [a | identity (slacks) | rhs], objective row of reduced costs.
  const size_t width = n + m + 1;
  std::vector<std::vector<double>> t(m, std::vector<double>(width, 0));
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) t[i][j] = a[i][j];
    t[i][n + i] = 1;
    t[i][width - 1] = b[i];
  }
  std::vector<double> z(width, 0);
  for (size_t j = 0; j < n; ++j) z[j] = -c[j];
  std::vector<size_t> basis(m);
  for (size_t i = 0; i < m; ++i) basis[i] = n + i;
  int degenerate = 0;
  for (int pivot = 0; pivot < maxPivots; ++pivot) {
    size_t enter = width;
    if (degenerate < 50) {
      double most = -1e-9;
      for (size_t j = 0; j + 1 < width; ++j)
        if (z[j] < most) {
          most = z[j];
          enter = j;
        }
    } else {
      for (size_t j = 0; j + 1 < width && enter == width; ++j)
        if (z[j] < -1e-9) enter = j;
    }
    if (enter == width) break;  // optimal
    size_t leave = m;
    double best = INFINITY;
    for (size_t i = 0; i < m; ++i)
      if (t[i][enter] > kEps) {
        const double ratio = t[i][width - 1] / t[i][enter];
        if (ratio < best - 1e-15 ||
            (ratio <= best + 1e-15 && leave < m && basis[i] < basis[leave])) {
          best = ratio;
          leave = i;
        }
      }
    if (leave == m) break;  // unbounded: cannot happen with a non-negative A without zero columns
    degenerate = best < 1e-15 ? degenerate + 1 : 0;
    const double p = t[leave][enter];
    for (double& v : t[leave]) v /= p;
    for (size_t i = 0; i < m; ++i) {
      if (i == leave || t[i][enter] == 0) continue;
      const double f = t[i][enter];
      for (size_t j = 0; j < width; ++j) t[i][j] -= f * t[leave][j];
    }
    const double f = z[enter];
    for (size_t j = 0; j < width; ++j) z[j] -= f * t[leave][j];
    basis[leave] = enter;
  }
  std::vector<double> x(n, 0);
  for (size_t i = 0; i < m; ++i)
    if (basis[i] < n) x[basis[i]] = std::max(0.0, t[i][width - 1]);
  return x;
}

}  // namespace weft::topology
