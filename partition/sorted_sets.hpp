#pragma once
// Union and intersection size of ascending id lists by all threads: the
// lists are cut at the same ids into pieces (splitters taken from the
// longest list), each piece is merged on its own, and the pieces are
// concatenated. The reorganizer's and the cost model's unions of a
// friendster-like graph (m = 4, n = 8: a few tens of millions of ids each)
// ran one per batch, so on 64 cores at most 8 threads worked (issue 33).
// Results are the set operations' and do not depend on the thread count.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <span>
#include <vector>

#include <omp.h>

#include "core/bulk_memory.hpp"
#include "graph/types.hpp"

namespace ht::sorted_sets {

// Below this many ids in all a parallel region costs more than it saves.
inline constexpr int64_t kParallelMin = int64_t{1} << 16;

// Ids that cut [0, inf) into at most `pieces` ranges of similar size in the
// longest list: range k is [cuts[k], cuts[k + 1]), cuts.front() = 0 and
// cuts.back() = the end (one past the largest id).
inline std::vector<uint64_t> cuts_of(std::span<const std::span<const vid_t>> lists, int pieces) {
  std::span<const vid_t> longest;
  for (const auto& l : lists)
    if (l.size() > longest.size()) longest = l;
  std::vector<uint64_t> cuts{0};
  for (int k = 1; k < pieces && !longest.empty(); ++k) {
    const uint64_t c = longest[longest.size() * static_cast<size_t>(k) / static_cast<size_t>(pieces)];
    if (c > cuts.back()) cuts.push_back(c);
  }
  cuts.push_back(uint64_t{std::numeric_limits<vid_t>::max()} + 1);
  return cuts;
}

inline std::span<const vid_t> range_of(std::span<const vid_t> l, uint64_t lo, uint64_t hi) {
  const auto below = [](vid_t v, uint64_t x) { return static_cast<uint64_t>(v) < x; };
  const auto a = std::lower_bound(l.begin(), l.end(), lo, below);
  const auto b = std::lower_bound(a, l.end(), hi, below);
  return {a, b};
}

// Union of ascending lists, merged one after another into `out` (the first
// two in one pass: no copy of the first list on its own).
inline void union_into(std::span<const std::span<const vid_t>> lists, std::vector<vid_t>& out) {
  out.clear();
  if (lists.size() >= 2) {
    out.reserve(lists[0].size() + lists[1].size());
    std::set_union(lists[0].begin(), lists[0].end(), lists[1].begin(), lists[1].end(), std::back_inserter(out));
  } else if (lists.size() == 1) {
    out.assign(lists[0].begin(), lists[0].end());
  }
  std::vector<vid_t> tmp;
  for (const auto& l : lists.subspan(std::min<size_t>(lists.size(), 2))) {
    tmp.clear();
    tmp.reserve(out.size() + l.size());
    std::set_union(out.begin(), out.end(), l.begin(), l.end(), std::back_inserter(tmp));
    out.swap(tmp);
  }
}

// The union of ascending lists (ascending, no duplicates), by all threads
// when large and not already inside a parallel region.
inline std::vector<vid_t> unite(std::span<const std::span<const vid_t>> lists) {
  int64_t total = 0;
  for (const auto& l : lists) total += static_cast<int64_t>(l.size());
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  std::vector<vid_t> out;
  if (total < kParallelMin || threads == 1) {
    union_into(lists, out);
    return out;
  }
  const std::vector<uint64_t> cuts = cuts_of(lists, 4 * threads);
  const auto pieces = static_cast<int64_t>(cuts.size()) - 1;
  std::vector<std::vector<vid_t>> piece(static_cast<size_t>(pieces));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < pieces; ++k) {
    std::vector<std::span<const vid_t>> parts;
    for (const auto& l : lists) parts.push_back(range_of(l, cuts[k], cuts[k + 1]));
    union_into(parts, piece[k]);
  }
  std::vector<size_t> at(static_cast<size_t>(pieces) + 1, 0);
  for (int64_t k = 0; k < pieces; ++k) at[k + 1] = at[k] + piece[k].size();
  // Fresh pages faulted in by all threads (huge where offered): a plain
  // resize() faulted and zeroed tens of millions of ids from one thread, for
  // every union of the reorganization and the cost model.
  resize_for_overwrite(out, at.back());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < pieces; ++k) {
    std::copy(piece[k].begin(), piece[k].end(), out.begin() + static_cast<std::ptrdiff_t>(at[k]));
    std::vector<vid_t>().swap(piece[k]);
  }
  return out;
}

inline int64_t intersection_size_serial(std::span<const vid_t> a, std::span<const vid_t> b) {
  int64_t k = 0;
  auto x = a.begin(), y = b.begin();
  while (x != a.end() && y != b.end()) {
    if (*x < *y) ++x;
    else if (*y < *x) ++y;
    else ++k, ++x, ++y;
  }
  return k;
}

// |a ∩ b| of two ascending lists, by all threads when large and not already
// inside a parallel region.
inline int64_t intersection_size(std::span<const vid_t> a, std::span<const vid_t> b) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (static_cast<int64_t>(a.size() + b.size()) < kParallelMin || threads == 1) return intersection_size_serial(a, b);
  const std::span<const vid_t> both[] = {a, b};
  const std::vector<uint64_t> cuts = cuts_of(both, 4 * threads);
  const auto pieces = static_cast<int64_t>(cuts.size()) - 1;
  int64_t k = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : k)
  for (int64_t p = 0; p < pieces; ++p)
    k += intersection_size_serial(range_of(a, cuts[p], cuts[p + 1]), range_of(b, cuts[p], cuts[p + 1]));
  return k;
}

}  // namespace ht::sorted_sets
