#pragma once
// A set of vertices as one bit per vertex, for the per-chunk neighbor sets of
// the plan builder and of the plan's sizes (chunk_shape).
#include <atomic>
#include <bit>
#include <cstdint>
#include <vector>

#include "graph/types.hpp"

namespace ht {

// A set of vertices as one bit per vertex, reused across the chunks a thread
// builds (cleared through the list of members, so a chunk costs O(its
// edges), not O(N)); with the members' sorted list it answers rank(v) =
// position of v in that list from the bit's word in O(1).
class VertexBits {
 public:
  explicit VertexBits(int64_t num_vertices)
      : words_((num_vertices + 63) / 64, 0), first_(words_.size(), 0) {}
  bool insert(vid_t v) {  // true when v was not in the set
    uint64_t& w = words_[v >> 6];
    const uint64_t bit = uint64_t{1} << (v & 63);
    const bool fresh = (w & bit) == 0;
    w |= bit;
    return fresh;
  }
  // `members` = the set, ascending.
  void prepare_rank(const std::vector<vid_t>& members) {
    for (size_t k = members.size(); k-- > 0;) first_[members[k] >> 6] = static_cast<uint32_t>(k);
  }
  // prepare_rank by `threads` threads: in an ascending list the first member
  // of each word is the one whose word differs from its predecessor's, so
  // every word is written once, whatever the split.
  void prepare_rank_parallel(const std::vector<vid_t>& members, int threads) {
    const auto size = static_cast<int64_t>(members.size());
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < size; ++k)
      if (k == 0 || (members[k - 1] >> 6) != (members[k] >> 6)) first_[members[k] >> 6] = static_cast<uint32_t>(k);
  }
  uint32_t rank(vid_t v) const {
    const uint64_t below = words_[v >> 6] & ((uint64_t{1} << (v & 63)) - 1);
    return first_[v >> 6] + static_cast<uint32_t>(std::popcount(below));
  }
  void clear(const std::vector<vid_t>& members) {
    for (vid_t v : members) words_[v >> 6] = 0;
  }
  // The same set built by several threads at once (one chunk's neighbor set
  // in parallel: plan_builder's chunk_topology for a plan of one chunk; the
  // chunking's count of distinct neighbors): insert_shared from any thread
  // (true for exactly one of the threads that insert v first), then
  // members_and_rank and clear_all, each itself parallel, outside the
  // inserting region.
  bool insert_shared(vid_t v) {
    const uint64_t bit = uint64_t{1} << (v & 63);
    std::atomic_ref<uint64_t> word(words_[v >> 6]);
    // Most vertices are in already: a read before the OR keeps the cache line
    // shared between the cores.
    if ((word.load(std::memory_order_relaxed) & bit) != 0) return false;
    return (word.fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
  }
  // The members, ascending, with rank() prepared (as prepare_rank).
  std::vector<vid_t> members_and_rank();
  void clear_all();

 private:
  std::vector<uint64_t> words_;
  std::vector<uint32_t> first_;  // per word: rank of its lowest member
};

}  // namespace ht
