#include "partition/ml_contract.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "core/bulk_memory.hpp"
#include "partition/ml_rating.hpp"

namespace ht::ml {
namespace {

// Renumbers the labels to 0..count-1 in label order; returns the count.
int64_t compact_labels(std::vector<vid_t>& label) {
  const int64_t n = static_cast<int64_t>(label.size());
  std::vector<int64_t> rank;
  resize_for_overwrite(rank, static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) std::atomic_ref<int64_t>(rank[label[v]]).store(1, std::memory_order_relaxed);
  parallel_inclusive_scan(rank);  // rank[c] = labels in use that are <= c
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) label[v] = static_cast<vid_t>(rank[label[v]] - 1);
  return n == 0 ? 0 : rank[n - 1];
}

// Members of each coarse vertex: members[off[c] .. off[c + 1]). The order
// inside a list depends on timing; nothing below depends on it (sums of
// integers, rows sorted by neighbor).
void member_lists(const std::vector<vid_t>& coarse_of, int64_t count, std::vector<int64_t>& off,
                  std::vector<vid_t>& members) {
  const int64_t n = static_cast<int64_t>(coarse_of.size());
  resize_for_overwrite(off, static_cast<size_t>(count) + 1);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v)
    std::atomic_ref<int64_t>(off[coarse_of[v] + 1]).fetch_add(1, std::memory_order_relaxed);
  parallel_inclusive_scan(off);  // off[c + 1] = end of list c
  resize_for_overwrite(members, static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) {
    const int64_t at = std::atomic_ref<int64_t>(off[coarse_of[v] + 1]).fetch_sub(1, std::memory_order_relaxed) - 1;
    members[at] = static_cast<vid_t>(v);
  }
  // off[c + 1] is now the start of list c: shift into place.
  std::memmove(off.data(), off.data() + 1, static_cast<size_t>(count) * sizeof(int64_t));
  off[count] = n;
}

}  // namespace

template <typename G>
CoarseLevel contract(const G& g, std::vector<vid_t>& label, Progress& progress) {
  const int64_t count = compact_labels(label);
  std::vector<int64_t> off;
  std::vector<vid_t> members;
  member_lists(label, count, off, members);

  std::vector<weight_t> vertex_weights;
  resize_for_overwrite(vertex_weights, static_cast<size_t>(count));
  const int64_t blocks = (count + CoarseLevel::kBlockRows - 1) / CoarseLevel::kBlockRows;
  std::vector<CoarseLevel::Block> rows(static_cast<size_t>(blocks));
#pragma omp parallel
  {
    RatingMap map;
    std::vector<std::pair<vid_t, weight_t>> row, buffer;
    std::vector<vid_t> targets;
    std::vector<weight_t> weights;
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * CoarseLevel::kBlockRows;
      const int64_t last = std::min(count, first + CoarseLevel::kBlockRows);
      CoarseLevel::Block& out = rows[b];
      out.offsets.assign(static_cast<size_t>(last - first) + 1, 0);
      targets.clear();
      weights.clear();
      int64_t work = 0;
      for (int64_t c = first; c < last; ++c) {
        weight_t vw = 0;
        int64_t degrees = 0;
        for (int64_t i = off[c]; i < off[c + 1]; ++i) {
          vw += g.vertex_weight(members[i]);
          degrees += g.degree(members[i]);
        }
        vertex_weights[c] = vw;
        work += degrees;
        // Sized for the distinct neighbors there can be; grows if needed.
        map.start(std::min<int64_t>({degrees, count, int64_t{1} << 16}));
        for (int64_t i = off[c]; i < off[c + 1]; ++i) add_neighbor_labels(g, members[i], label, map, buffer);
        row.clear();
        map.for_each([&](vid_t cu, weight_t w) {
          if (cu != static_cast<vid_t>(c)) row.emplace_back(cu, w);  // edges inside the cluster vanish
        });
        map.clear();
        std::sort(row.begin(), row.end());
        for (const auto& [cu, w] : row) {
          targets.push_back(cu);
          weights.push_back(w);
        }
        out.offsets[c - first + 1] = static_cast<int64_t>(targets.size());
      }
      out.targets.assign(targets.begin(), targets.end());
      out.weights.assign(weights.begin(), weights.end());
      progress.add(work);
    }
  }
  return CoarseLevel(std::move(rows), std::move(vertex_weights));
}

template CoarseLevel contract<FineLevel>(const FineLevel&, std::vector<vid_t>&, Progress&);
template CoarseLevel contract<CoarseLevel>(const CoarseLevel&, std::vector<vid_t>&, Progress&);

}  // namespace ht::ml
