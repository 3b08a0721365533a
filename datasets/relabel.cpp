#include "datasets/relabel.hpp"

#include <parallel/algorithm>

#include <algorithm>
#include <atomic>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"

namespace ht::data {
namespace {

constexpr int64_t kParallelMin = 1 << 16;  // smaller loops run faster on one thread

// Maps every id through `map` into a 32-bit array and frees the input.
template <typename Map>
std::vector<vid_t> narrow(std::vector<uint64_t>& ids, const Map& map) {
  std::vector<vid_t> out(ids.size());
  const int64_t m = static_cast<int64_t>(ids.size());
#pragma omp parallel for schedule(static) if (m > kParallelMin)
  for (int64_t i = 0; i < m; ++i) out[i] = map(ids[i]);
  std::vector<uint64_t>().swap(ids);
  return out;
}

uint64_t max_id(const RawEdges& e) {
  uint64_t mx = 0;
  const int64_t m = e.size();
#pragma omp parallel for reduction(max : mx) if (m > kParallelMin)
  for (int64_t i = 0; i < m; ++i) mx = std::max({mx, e.src[i], e.dst[i]});
  return mx;
}

EdgeList narrow_all(RawEdges&& raw, int64_t n, const auto& map) {
  EdgeList el;
  el.num_vertices = n;
  el.src = narrow(raw.src, map);
  el.dst = narrow(raw.dst, map);
  el.weight = std::move(raw.weight);
  return el;
}

void check_vertex_count(uint64_t n, const IdPolicy& p, const char* what) {
  if (n > static_cast<uint64_t>(kMaxVertices32))
    throw file_error(p.input, fmt::format("{} {} vertices: graphs are limited to 2^31 - 1 vertices", what, n));
}

// Ranks through a dense marker array (ids small compared to the edge count).
EdgeList relabel_by_marks(RawEdges&& raw, uint64_t mx, const IdPolicy& p, std::vector<int64_t>& orig_ids) {
  std::vector<uint32_t> rank(mx + 1, 0);
  const int64_t m = raw.size();
#pragma omp parallel for schedule(static) if (m > kParallelMin)
  for (int64_t i = 0; i < m; ++i) {
    std::atomic_ref<uint32_t>(rank[raw.src[i]]).store(1, std::memory_order_relaxed);
    std::atomic_ref<uint32_t>(rank[raw.dst[i]]).store(1, std::memory_order_relaxed);
  }
  uint64_t distinct = 0;
  for (uint64_t id = 0; id <= mx; ++id) {
    const uint32_t present = rank[id];
    rank[id] = static_cast<uint32_t>(distinct);
    distinct += present;
  }
  if (distinct == mx + 1) {  // already dense: no relabeling, no orig_ids
    check_vertex_count(distinct, p, "ids 0..max give");
    return narrow_all(std::move(raw), static_cast<int64_t>(distinct), [](uint64_t id) { return static_cast<vid_t>(id); });
  }
  check_vertex_count(distinct, p, "the input has");
  orig_ids.resize(distinct);
  for (uint64_t id = 0; id <= mx; ++id)
    if ((id == mx ? distinct : rank[id + 1]) != rank[id]) orig_ids[rank[id]] = static_cast<int64_t>(id);
  log::info("{}: ids are not dense (max id {}, {} distinct); relabeled to 0..{} (orig_ids kept)", p.input, mx,
            distinct, distinct - 1);
  return narrow_all(std::move(raw), static_cast<int64_t>(distinct), [&](uint64_t id) { return rank[id]; });
}

// Ranks through a sorted list of the distinct ids (huge or sparse ids).
EdgeList relabel_by_sorting(RawEdges&& raw, uint64_t mx, const IdPolicy& p, std::vector<int64_t>& orig_ids) {
  std::vector<uint64_t> ids;
  ids.reserve(2 * raw.src.size());
  ids.insert(ids.end(), raw.src.begin(), raw.src.end());
  ids.insert(ids.end(), raw.dst.begin(), raw.dst.end());
  __gnu_parallel::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  check_vertex_count(ids.size(), p, "the input has");
  orig_ids.assign(ids.begin(), ids.end());
  log::info("{}: ids are not dense (max id {}, {} distinct); relabeled to 0..{} (orig_ids kept)", p.input, mx,
            ids.size(), ids.size() - 1);
  auto rank = [&](uint64_t id) { return static_cast<vid_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin()); };
  return narrow_all(std::move(raw), static_cast<int64_t>(ids.size()), rank);
}

}  // namespace

EdgeList to_dense_ids(RawEdges&& raw, const IdPolicy& p, std::vector<int64_t>& orig_ids) {
  orig_ids.clear();
  if (p.known_vertices >= 0) {
    check_vertex_count(static_cast<uint64_t>(p.known_vertices), p, "the vertex count gives");
    const uint64_t mx = raw.size() ? max_id(raw) : 0;
    if (raw.size() && mx >= static_cast<uint64_t>(p.known_vertices))
      throw file_error(p.input, fmt::format("vertex id {} is out of range (N = {})", mx, p.known_vertices));
    return narrow_all(std::move(raw), p.known_vertices, [](uint64_t id) { return static_cast<vid_t>(id); });
  }
  if (raw.size() == 0) throw file_error(p.input, "no edges found, and nothing gives the vertex count");
  const uint64_t mx = max_id(raw);
  if (mx > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw file_error(p.input, fmt::format("vertex id {} is above 2^63 - 1", mx));
  if (p.keep_ids) {
    if (mx >= static_cast<uint64_t>(kMaxVertices32))
      throw file_error(p.input, fmt::format("--keep-ids: max id {} would need more than 2^31 - 1 vertices; let "
                                            "ht-convert relabel the ids",
                                            mx));
    return narrow_all(std::move(raw), static_cast<int64_t>(mx + 1), [](uint64_t id) { return static_cast<vid_t>(id); });
  }
  const uint64_t dense_limit = std::max<uint64_t>(uint64_t{1} << 24, 4 * static_cast<uint64_t>(raw.size()));
  if (mx < std::numeric_limits<uint32_t>::max() && mx < dense_limit) return relabel_by_marks(std::move(raw), mx, p, orig_ids);
  return relabel_by_sorting(std::move(raw), mx, p, orig_ids);
}

}  // namespace ht::data
