#pragma once
// Per-thread accumulators for label propagation: the weight of a vertex's
// edges into each neighboring cluster (open addressing, sized per vertex from
// its degree, so it stays small and cache-resident for ordinary vertices and
// never needs an array over all clusters), and into each of k blocks (dense).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "graph/types.hpp"
#include "partition/ml_graph.hpp"

namespace ht::ml {

class RatingMap {
 public:
  // Prepares for about `entries` distinct keys (more make it grow); the map
  // must be empty.
  void start(int64_t entries) { size_for(entries); }
  void add(vid_t key, weight_t w) {
    size_t h = slot(key);
    while (true) {
      if (keys_[h] == key) {
        values_[h] += w;
        return;
      }
      if (keys_[h] == kEmpty) {
        keys_[h] = key;
        values_[h] = w;
        used_.push_back(h);
        if (2 * used_.size() > mask_ + 1) grow();
        return;
      }
      h = (h + 1) & mask_;
    }
  }
  // f(key, total) for every key added since start(), in insertion order.
  template <typename F>
  void for_each(F&& f) const {
    for (size_t h : used_) f(keys_[h], values_[h]);
  }
  void clear() {
    for (size_t h : used_) keys_[h] = kEmpty;
    used_.clear();
  }

 private:
  static constexpr vid_t kEmpty = ~vid_t{0};  // never a vertex id (N < 2^31)

  size_t slot(vid_t key) const {
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ULL) >> shift_);  // Fibonacci hashing
  }

  void size_for(int64_t entries) {
    const int bits = std::max(4, static_cast<int>(std::bit_width(static_cast<uint64_t>(2 * entries))));
    shift_ = 64 - bits;
    mask_ = (size_t{1} << bits) - 1;
    if (keys_.size() < mask_ + 1) {
      keys_.assign(mask_ + 1, kEmpty);
      values_.resize(mask_ + 1);
    }
  }

  // A table four times larger, the entries re-inserted in insertion order.
  void grow() {
    std::vector<std::pair<vid_t, weight_t>> entries;
    entries.reserve(used_.size());
    for (size_t h : used_) {
      entries.emplace_back(keys_[h], values_[h]);
      keys_[h] = kEmpty;
    }
    used_.clear();
    size_for(static_cast<int64_t>(mask_ + 1));
    for (const auto& [key, value] : entries) {
      size_t h = slot(key);
      while (keys_[h] != kEmpty) h = (h + 1) & mask_;
      keys_[h] = key;
      values_[h] = value;
      used_.push_back(h);
    }
  }

  std::vector<vid_t> keys_;
  std::vector<weight_t> values_;
  std::vector<size_t> used_;
  int shift_ = 60;
  size_t mask_ = 15;
};

// Weight into each of `keys` keys (keys < `keys`), dense, with the keys
// touched in insertion order: RatingMap's interface without hashing, for
// contraction onto a level small enough for one array per thread.
class DenseRatings {
 public:
  explicit DenseRatings(int64_t keys) : values_(static_cast<size_t>(keys), 0) {}
  void start(int64_t) {}
  void add(vid_t key, weight_t w) {
    if (values_[key] == 0) touched_.push_back(key);
    values_[key] += w;
  }
  template <typename F>
  void for_each(F&& f) const {
    for (vid_t key : touched_) f(key, values_[key]);
  }
  void clear() {
    for (vid_t key : touched_) values_[key] = 0;
    touched_.clear();
  }

 private:
  std::vector<weight_t> values_;
  std::vector<vid_t> touched_;
};

// Weight into each of k blocks, dense, with the list of blocks touched.
class BlockRatings {
 public:
  explicit BlockRatings(int k) : values_(static_cast<size_t>(k), 0) {}
  void add(vid_t block, weight_t w) { add(static_cast<int32_t>(block), w); }
  void add(int32_t block, weight_t w) {
    if (values_[block] == 0 && w != 0) touched_.push_back(block);
    values_[block] += w;
  }
  weight_t operator[](int32_t block) const { return values_[block]; }
  const std::vector<int32_t>& touched() const { return touched_; }
  void clear() {
    for (int32_t b : touched_) values_[b] = 0;
    touched_.clear();
  }

 private:
  std::vector<weight_t> values_;
  std::vector<int32_t> touched_;
};

// Adds the (label[u], w) of v's neighbors to `ratings` (a RatingMap or
// BlockRatings), in for_each_neighbor's order. The labels are gathered into
// `buffer` a batch at a time before they are added: on large graphs each
// label load is a cache miss, and loads that do not wait for the previous
// table update overlap. The label kPrefetch entries ahead is prefetched as
// well: the gather loop alone kept too few misses in flight (its samples sat
// on the label loads: more than half of an input level's clustering time).
template <typename G, typename Labels, typename Ratings>
void add_neighbor_labels(const G& g, int64_t v, const Labels& label, Ratings& ratings,
                         std::vector<std::pair<vid_t, weight_t>>& buffer) {
  constexpr size_t kBatch = 1024;
  constexpr size_t kPrefetch = 16;
  buffer.clear();
  const auto* labels = label.data();
  g.for_each_neighbor_run(v, [&](std::span<const vid_t> ids, const weight_t* weights) {
    const size_t len = ids.size();
    for (size_t i = 0; i < len; ++i) {
      if (i + kPrefetch < len) __builtin_prefetch(labels + ids[i + kPrefetch]);
      const vid_t u = ids[i];
      if (static_cast<int64_t>(u) == v) continue;  // self-loops (input level only)
      buffer.emplace_back(static_cast<vid_t>(labels[u]), weights == nullptr ? weight_t{1} : weights[i]);
      if (buffer.size() < kBatch) continue;
      for (const auto& [c, x] : buffer) ratings.add(c, x);
      buffer.clear();
    }
  });
  for (const auto& [c, x] : buffer) ratings.add(c, x);
  buffer.clear();
}

}  // namespace ht::ml
