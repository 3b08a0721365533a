#include "partition/partition.hpp"

#include <algorithm>
#include <utility>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"

namespace ht {
namespace {

// Sources of one renumbered row, sorted ascending; weights (if any) follow
// their source. Stable so that duplicate edges keep their weight order.
void sort_row(std::span<vid_t> src, std::span<float> w, std::vector<std::pair<vid_t, float>>& tmp) {
  if (src.size() < 2) return;
  if (w.empty()) {
    std::sort(src.begin(), src.end());
    return;
  }
  tmp.clear();
  for (size_t i = 0; i < src.size(); ++i) tmp.emplace_back(src[i], w[i]);
  std::stable_sort(tmp.begin(), tmp.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = tmp[i].first;
    w[i] = tmp[i].second;
  }
}

// A row in new ids is, for the partitions ht-partition makes, an interleaving
// of ascending runs, one per chunk: the input row is ascending in old ids and
// every chunk keeps its vertices' old relative order. Dealt stably into one
// bucket per chunk (ascending ranges of new ids), such a row comes out sorted
// in one linear pass; the comparison sorts of rows were about half of
// renumber()'s time (issue 33). Any other row is left for sort_row. Either
// way the result is the stable sort: the multiset ascending, equal sources in
// input order with their weights.
class RowBuckets {
 public:
  explicit RowBuckets(std::span<const int64_t> chunk_offsets) {
    // Bucket b holds ids in [lower[b], lower[b + 1]); empty chunks dropped.
    for (size_t c = 0; c + 1 < chunk_offsets.size(); ++c)
      if (chunk_offsets[c + 1] > chunk_offsets[c] && (lower_.empty() || chunk_offsets[c] > lower_.back()))
        lower_.push_back(chunk_offsets[c]);
    if (!lower_.empty()) lower_.front() = 0;
    count_.resize(lower_.size() + 1);
  }
  bool useful() const { return lower_.size() > 1; }

  // Sorts src (and w, when not empty) in place and returns true when every
  // bucket's part of the row is ascending; else returns false and leaves
  // them as they were.
  bool sort(std::span<vid_t> src, std::span<float> w) {
    const size_t len = src.size();
    if (bucket_.size() < len) {
      bucket_.resize(len);
      src_tmp_.resize(len);
    }
    if (!w.empty() && w_tmp_.size() < len) w_tmp_.resize(len);
    std::fill(count_.begin(), count_.end(), 0);
    for (size_t i = 0; i < len; ++i) {
      const uint32_t b = bucket_of(src[i]);
      bucket_[i] = b;
      ++count_[b + 1];
    }
    for (size_t b = 1; b < count_.size(); ++b) count_[b] += count_[b - 1];
    for (size_t i = 0; i < len; ++i) src_tmp_[count_[bucket_[i]]++] = src[i];
    for (size_t i = 1; i < len; ++i)
      if (src_tmp_[i] < src_tmp_[i - 1]) return false;
    std::copy_n(src_tmp_.begin(), len, src.begin());
    if (!w.empty()) {
      // count_[b] is now the end of bucket b: deal the weights from the back.
      for (size_t i = len; i-- > 0;) w_tmp_[--count_[bucket_[i]]] = w[i];
      std::copy_n(w_tmp_.begin(), len, w.begin());
    }
    return true;
  }

 private:
  // The last bucket whose lower bound is <= x (branch-free halving).
  uint32_t bucket_of(vid_t x) const {
    size_t lo = 0, n = lower_.size();
    while (n > 1) {
      const size_t half = n / 2;
      lo = lower_[lo + half] <= static_cast<int64_t>(x) ? lo + half : lo;
      n -= half;
    }
    return static_cast<uint32_t>(lo);
  }

  std::vector<int64_t> lower_;
  std::vector<size_t> count_;
  std::vector<uint32_t> bucket_;
  std::vector<vid_t> src_tmp_;
  std::vector<float> w_tmp_;
};

void check_renumber_inputs(const GraphView& g, const Partition& p) {
  HT_CHECK(g.num_vertices == p.num_vertices && static_cast<int64_t>(p.new_to_old.size()) == g.num_vertices &&
               static_cast<int64_t>(p.old_to_new.size()) == g.num_vertices,
           "partition is for {} vertices but the graph has {} (was it made from another graph?)", p.num_vertices,
           g.num_vertices);
  HT_CHECK(g.num_edges == p.num_edges, "partition is for {} edges but the graph has {} (was it made from another graph?)",
           p.num_edges, g.num_edges);
}

// Offsets of the rows in new order: in-degrees gathered and summed in parallel.
void renumber_offsets(const GraphView& g, const Partition& p, Graph& out) {
  const int64_t n = g.num_vertices;
  resize_for_overwrite(out.offsets, static_cast<size_t>(n) + 1);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) out.offsets[v + 1] = g.in_degree(p.new_to_old[v]);
  parallel_inclusive_scan(out.offsets);
}

// Rows up to this length are sorted by comparisons (insertion sort's range),
// longer ones dealt into chunk buckets first (RowBuckets).
constexpr size_t kBucketRow = 16;

// Rows of the CSC in new order, sources mapped to new ids. Ids that do not
// change leave the rows as they are: copied (0.27 s of a 1.3 s setup on
// community at m = n = 1 mapped every edge).
void renumber_topology(const GraphView& g, const Partition& p, Graph& out) {
  const int64_t n = g.num_vertices;
  if (keeps_ids(p)) {
    out.offsets = copy_to_vector(g.offsets);
    out.sources = copy_to_vector(g.sources);
    out.weights = copy_to_vector(g.weights);
    return;
  }
  renumber_offsets(g, p, out);
  resize_for_overwrite(out.sources, static_cast<size_t>(g.num_edges));
  const bool weighted = !g.weights.empty();
  if (weighted) resize_for_overwrite(out.weights, static_cast<size_t>(g.num_edges));
  // Sorted input stays sorted in the new ids, so consumers relying on the
  // flag (dedup checks, locality of gathers) keep working. A row whose
  // mapped ids are still ascending (any order-preserving renumbering, e.g.
  // range partitions) is left as it is.
  const bool sort = g.flags.sorted_neighbors;
#pragma omp parallel
  {
    std::vector<std::pair<vid_t, float>> tmp;
    RowBuckets buckets(p.chunk_offsets);
#pragma omp for schedule(dynamic, 4096)
    for (int64_t v = 0; v < n; ++v) {
      const int64_t old = p.new_to_old[v];
      const int64_t b = g.offsets[old], e = g.offsets[old + 1], o = out.offsets[v];
      bool ascending = true;
      for (int64_t i = b; i < e; ++i) {
        const vid_t x = p.old_to_new[g.sources[i]];
        out.sources[o + i - b] = x;
        if (i > b && x < out.sources[o + i - b - 1]) ascending = false;
      }
      if (weighted) std::copy(g.weights.begin() + b, g.weights.begin() + e, out.weights.begin() + o);
      if (sort && !ascending) {
        const size_t len = static_cast<size_t>(e - b);
        const std::span<vid_t> src = std::span<vid_t>(out.sources).subspan(o, len);
        const std::span<float> w = weighted ? std::span<float>(out.weights).subspan(o, len) : std::span<float>();
        if (!(len > kBucketRow && buckets.useful() && buckets.sort(src, w))) sort_row(src, w, tmp);
      }
    }
  }
}

// dst[v] = src[new_to_old[v]] for every vertex, in parallel.
template <typename T>
void gather_by_new_id(std::span<const T> src, const Partition& p, std::vector<T>& dst) {
  resize_for_overwrite(dst, p.new_to_old.size());
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < static_cast<int64_t>(dst.size()); ++v) dst[v] = src[p.new_to_old[v]];
}

// Rows of `f` values: dst row v = src row new_to_old[v], in parallel.
template <typename T>
void gather_rows(std::span<const T> src, size_t f, const Partition& p, std::vector<T>& dst) {
  const int64_t n = static_cast<int64_t>(p.new_to_old.size());
  resize_for_overwrite(dst, static_cast<size_t>(n) * f);
#pragma omp parallel for schedule(static, 1024)
  for (int64_t v = 0; v < n; ++v)
    std::copy_n(src.begin() + static_cast<size_t>(p.new_to_old[v]) * f, f, dst.begin() + static_cast<size_t>(v) * f);
}

void renumber_vertex_data(const GraphView& g, const Partition& p, Graph& out) {
  const int64_t n = g.num_vertices;
  const size_t f = static_cast<size_t>(g.feature_dim);
  out.feature_dim = g.feature_dim;
  out.num_classes = g.num_classes;
  // Features keep their dtype: 16-bit rows are moved as they are.
  out.feature_dtype = g.feature_dtype;
  if (!g.features.empty()) gather_rows(g.features, f, p, out.features);
  if (!g.features16.empty()) gather_rows(g.features16, f, p, out.features16);
  if (!g.labels.empty()) gather_by_new_id(g.labels, p, out.labels);
  if (!g.split.empty()) gather_by_new_id(g.split, p, out.split);
  // Always present after renumbering: the way back to the raw input's ids
  // (predictions are exported in those ids).
  if (!g.orig_ids.empty()) {
    gather_by_new_id(g.orig_ids, p, out.orig_ids);
    return;
  }
  resize_for_overwrite(out.orig_ids, static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) out.orig_ids[v] = static_cast<int64_t>(p.new_to_old[v]);
}

}  // namespace

Graph renumber_vertices(const GraphView& g, const Partition& p) {
  check_renumber_inputs(g, p);
  GraphView vertices = g;
  vertices.features = {};
  vertices.features16 = {};
  Graph out;
  out.num_vertices = g.num_vertices;
  out.offsets.clear();  // no topology
  renumber_vertex_data(vertices, p, out);
  return out;
}

bool keeps_ids(const Partition& p) {
  const int64_t n = static_cast<int64_t>(p.new_to_old.size());
  return first_bad(n, [&](int64_t v) { return p.new_to_old[v] != static_cast<vid_t>(v); }) < 0;
}

std::vector<float> in_new_ids(std::span<const float> values, const Partition& p) {
  HT_CHECK(values.size() == p.new_to_old.size(), "{} values for a partition of {} vertices", values.size(),
           p.new_to_old.size());
  std::vector<float> out;
  gather_by_new_id(values, p, out);
  return out;
}

int Partition::owner(vid_t new_id) const {
  HT_CHECK(static_cast<int64_t>(new_id) < num_vertices, "vertex {} is outside the partition's {} vertices", new_id,
           num_vertices);
  // The last offset <= new_id; empty partitions (equal offsets) are skipped
  // because upper_bound lands after all of them.
  const auto it = std::upper_bound(part_offsets.begin(), part_offsets.end(), static_cast<int64_t>(new_id));
  return static_cast<int>(it - part_offsets.begin()) - 1;
}

Graph renumber(const GraphView& g, const Partition& p) {
  check_renumber_inputs(g, p);
  Graph out;
  out.num_vertices = g.num_vertices;
  renumber_topology(g, p, out);
  renumber_vertex_data(g, p, out);
  out.flags = g.flags;  // relabeling preserves every structural property
  return out;
}

}  // namespace ht
