#include "algorithms/tree_pattern.hpp"

namespace weft {

TreeLinks binaryTree(int n, int v) {
  TreeLinks t;
  if (n <= 1) return t;
  if (v == 0) {
    int top = 1;
    while (top * 2 < n) top *= 2;
    t.children.push_back(top);
    return t;
  }
  const int bit = v & -v;
  int up = (v ^ bit) | (bit << 1);
  if (up >= n) up = v ^ bit;
  t.parent = up;
  int low = bit >> 1;
  if (low == 0) return t;
  t.children.push_back(v - low);
  while (low > 0 && v + low >= n) low >>= 1;
  if (low > 0) t.children.push_back(v + low);
  return t;
}

int doubleBinaryTreeRoot1(int n) {
  return n % 2 == 0 ? n - 1 : 1 % n;
}

TreeLinks doubleBinaryTree(int n, int v, int tree) {
  if (tree == 0) return binaryTree(n, v);
  TreeLinks mapped;
  auto map = [&](int u) { return u < 0 ? -1 : n % 2 == 0 ? n - 1 - u : (u + 1) % n; };
  const int pre = n % 2 == 0 ? n - 1 - v : (v - 1 + n) % n;
  const TreeLinks t = binaryTree(n, pre);
  mapped.parent = map(t.parent);
  for (int c : t.children) mapped.children.push_back(map(c));
  return mapped;
}

namespace {
// k^level of v's lowest non-zero digit, and that digit; (0, 0) for v = 0.
void lowestDigit(int v, int radix, int64_t& place, int& digit) {
  place = 1;
  digit = 0;
  if (v == 0) return;
  while ((v / place) % radix == 0) place *= radix;
  digit = static_cast<int>((v / place) % radix);
}
}  // namespace

int knomialSpan(int n, int v, int radix) {
  if (v == 0) return n;
  int64_t place;
  int digit;
  lowestDigit(v, radix, place, digit);
  const int64_t end = v + place;
  return static_cast<int>((end < n ? end : n) - v);
}

TreeLinks knomialTree(int n, int v, int radix) {
  TreeLinks t;
  int64_t place;
  int digit;
  lowestDigit(v, radix, place, digit);
  if (v != 0) t.parent = static_cast<int>(v - digit * place);
  // Children live at places below v's own (every place for the root); larger places first.
  int64_t top = 1;
  if (v == 0) {
    while (top * radix < n) top *= radix;
  } else {
    top = place / radix;
  }
  for (int64_t p = top; p >= 1; p /= radix)
    for (int e = 1; e < radix; ++e) {
      const int64_t c = v + e * p;
      if (c < n) t.children.push_back(static_cast<int>(c));
    }
  return t;
}

FoldedRank foldToPowerOfTwo(int n, int rank) {
  const int rem = n - floorPowerOfTwo(n);
  FoldedRank f;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      f.partner = rank + 1;
    } else {
      f.partner = rank - 1;
      f.participant = rank / 2;
    }
  } else {
    f.participant = rank - rem;
  }
  return f;
}

int participantRank(int n, int v) {
  const int rem = n - floorPowerOfTwo(n);
  return v < rem ? 2 * v + 1 : v + rem;
}

int participantFirstRank(int n, int v) {
  const int rem = n - floorPowerOfTwo(n);
  return v < rem ? 2 * v : v + rem;
}

}  // namespace weft
