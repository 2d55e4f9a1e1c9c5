// Tree topologies as pure rank arithmetic (no schedules, no buffers): who is a rank's parent and
// who are its children. Ranks here are virtual ranks 0..n-1 rooted at 0; builders map them to
// real ranks (usually v = (rank - root) mod n).
#pragma once

#include <cstdint>
#include <vector>

namespace weft {

struct TreeLinks {
  int parent = -1;            // -1: the root
  std::vector<int> children;  // in the order data should flow to them (largest subtree first)
};

// NCCL's binary tree: rank v's level is its lowest set bit b; its parent clears b and sets 2b
// (or only clears b when that falls outside [0, n)); its children are v - b/2 and the largest
// v + b/2^k below n. Rank 0 is the root with a single child, the largest power of two below n.
// Odd ranks are leaves.
TreeLinks binaryTree(int n, int v);

// NCCL's double binary tree: tree 0 is binaryTree; tree 1 mirrors it (v -> n-1-v) when n is even
// and shifts it by one (v -> v+1) when n is odd, so that no rank is interior in both (for even
// n; odd n has one rank interior in both, as in NCCL).
TreeLinks doubleBinaryTree(int n, int v, int tree);
// The root of tree 1 (tree 0's root is 0).
int doubleBinaryTreeRoot1(int n);

// K-nomial tree of radix k >= 2 rooted at 0 (k = 2: binomial). Write v in base k; its level is
// the position i of its lowest non-zero digit d; its parent is v - d k^i, its children are
// v + e k^j for j < i and e in 1..k-1 (every level for the root). The subtree of v covers the
// contiguous virtual ranks [v, v + knomialSpan(n, v, k)).
TreeLinks knomialTree(int n, int v, int radix);
int knomialSpan(int n, int v, int radix);

// Largest power of two <= n (n >= 1).
inline int floorPowerOfTwo(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// The standard reduction of a non-power-of-two group to p' = floorPowerOfTwo(n) participants:
// the first 2(n - p') ranks pair up (even rank 2i folds into odd rank 2i+1), the rest take part
// alone. Participant ids are 0..p'-1.
struct FoldedRank {
  int participant = -1;  // -1: this rank folds into `partner` and waits for the result
  int partner = -1;      // the rank this one folds into, or that folds into it (-1: none)
};
FoldedRank foldToPowerOfTwo(int n, int rank);
// The real rank acting as participant v, and the first real rank whose data it carries (ranks
// [firstRank(v), firstRank(v + 1)) are in participant v's care: one or two of them).
int participantRank(int n, int v);
int participantFirstRank(int n, int v);

}  // namespace weft
