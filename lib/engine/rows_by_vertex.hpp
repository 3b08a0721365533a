#pragma once
// Rows of a list of vertices by vertex (pull_lists.cpp's kept remote rows,
// trainer_net.cpp's rows another process keeps): which rows a step's remote
// list holds, looked up per vertex without a hash map.
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "plan/plan.hpp"

namespace ht {

// Rows of one remote list by vertex, for the vertices of [lo, hi): a bit per
// vertex, the bits set before each 64-bit word, and per set bit (in vertex
// order) the row. A few bytes per vertex and per row, against a hash map's
// allocation per entry (an unordered_map of a step's remote rows took
// seconds per step at a billion edges).
class RowsByVertex {
 public:
  RowsByVertex() = default;
  RowsByVertex(std::span<const vid_t> vids, int64_t lo, int64_t hi) { assign(vids, lo, hi); }
  // The rows of another list, in the storage this one holds (the device-plan
  // steps' workspaces: no allocation once it is large enough).
  void assign(std::span<const vid_t> vids, int64_t lo, int64_t hi) {
    lo_ = lo;
    bits_.assign(static_cast<size_t>((hi - lo + 63) / 64), 0);
    before_.assign(bits_.size() + 1, 0);
    for (const vid_t v : vids)
      if (v >= lo && v < hi) bits_[(v - lo) >> 6] |= uint64_t{1} << ((v - lo) & 63);
    for (size_t w = 0; w < bits_.size(); ++w)
      before_[w + 1] = before_[w] + static_cast<uint32_t>(std::popcount(bits_[w]));
    row_.assign(before_.back(), 0);
    // Last row first: a vertex listed twice keeps its first row (as a map's emplace would).
    for (size_t q = vids.size(); q-- > 0;)
      if (vids[q] >= lo && vids[q] < hi) row_[rank(vids[q])] = static_cast<uint32_t>(q);
  }
  // The vertex's row, or -1 when it is not in the list (or outside [lo, hi)).
  int64_t operator()(vid_t v) const {
    const uint64_t x = static_cast<uint64_t>(int64_t{v} - lo_);
    if ((x >> 6) >= bits_.size() || !(bits_[x >> 6] >> (x & 63) & 1)) return -1;
    return row_[rank(v)];
  }

 private:
  size_t rank(vid_t v) const {
    const uint64_t x = static_cast<uint64_t>(int64_t{v} - lo_);
    const uint64_t below = bits_[x >> 6] & ((uint64_t{1} << (x & 63)) - 1);
    return before_[x >> 6] + static_cast<size_t>(std::popcount(below));
  }
  int64_t lo_ = 0;
  std::vector<uint64_t> bits_;
  std::vector<uint32_t> before_, row_;
};

}  // namespace ht
