#include "partition/partition_stats.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/progress.hpp"

namespace ht {
namespace {

// Old id -> partition.
std::vector<int32_t> owners_of_old_ids(const Partition& p) {
  std::vector<int32_t> part_of(p.num_vertices);
  for (int i = 0; i < p.m(); ++i)
    for (int64_t v = p.part_offsets[i]; v < p.part_offsets[i + 1]; ++v) part_of[p.new_to_old[v]] = i;
  return part_of;
}

// Distinct sources of the in-edges of new ids [b, e). `stamp` holds, per old
// id, the tag of the last range that counted it; `tag` must be unused so far.
int64_t count_in_neighbors(const GraphView& g, const Partition& p, int64_t b, int64_t e, std::vector<uint32_t>& stamp,
                           uint32_t tag) {
  int64_t distinct = 0;
  for (int64_t v = b; v < e; ++v) {
    for (vid_t u : g.in_neighbors(p.new_to_old[v])) {
      if (stamp[u] == tag) continue;
      stamp[u] = tag;
      ++distinct;
    }
  }
  return distinct;
}

int64_t in_edges_of_range(const GraphView& g, const Partition& p, int64_t b, int64_t e) {
  int64_t edges = 0;
  for (int64_t v = b; v < e; ++v) edges += g.in_degree(p.new_to_old[v]);
  return edges;
}

// Threads for the marker-array loops: each thread holds 4·N bytes of
// markers; keep them within 2 GiB together on huge graphs.
int marker_threads(int64_t n) {
  const int64_t budget = int64_t{2} << 30;
  const int64_t fit = std::max<int64_t>(1, budget / std::max<int64_t>(1, 4 * n));
  return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), fit));
}

template <typename Get>
double max_over_mean(size_t count, Get get) {
  double sum = 0, mx = 0;
  for (size_t i = 0; i < count; ++i) {
    sum += get(i);
    mx = std::max(mx, get(i));
  }
  return sum > 0 ? mx / (sum / static_cast<double>(count)) : 1.0;
}

void fill_chunks(const GraphView& g, const Partition& p, PartitionStats& s, Progress& progress) {
  const int n = p.n();
  const double c = p.params.chunk_vertex_weight;
  s.chunks.resize(static_cast<size_t>(p.m()) * n);
#pragma omp parallel num_threads(marker_threads(p.num_vertices))
  {
    std::vector<uint32_t> stamp(p.num_vertices, 0);
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < static_cast<int64_t>(s.chunks.size()); ++k) {
      const int64_t b = p.chunk_offsets[k], e = p.chunk_offsets[k + 1];
      ChunkStats& cs = s.chunks[k];
      cs.part = static_cast<int>(k / n);
      cs.chunk = static_cast<int>(k % n);
      cs.vertices = e - b;
      cs.in_edges = in_edges_of_range(g, p, b, e);
      cs.in_neighbors = count_in_neighbors(g, p, b, e, stamp, static_cast<uint32_t>(k + 1));
      for (int64_t v = b; v < e; ++v)
        for (vid_t u : g.in_neighbors(p.new_to_old[v])) {
          const int64_t nu = p.old_to_new[u];
          cs.cut_in_edges += nu < b || nu >= e ? 1 : 0;
        }
      cs.weight = static_cast<double>(cs.in_edges) + static_cast<double>(cs.vertices) * c;
      progress.add(cs.in_edges);
    }
  }
}

void fill_parts(const GraphView& g, const Partition& p, PartitionStats& s, Progress& progress) {
  const std::vector<int32_t> part_of = owners_of_old_ids(p);
  const double c = p.params.chunk_vertex_weight;
  s.parts.resize(p.m());
#pragma omp parallel num_threads(marker_threads(p.num_vertices))
  {
    std::vector<uint32_t> stamp(p.num_vertices, 0);
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < p.m(); ++i) {
      const int64_t b = p.part_offsets[i], e = p.part_offsets[i + 1];
      PartStats& ps = s.parts[i];
      ps.vertices = e - b;
      ps.in_edges = in_edges_of_range(g, p, b, e);
      ps.in_neighbors = count_in_neighbors(g, p, b, e, stamp, static_cast<uint32_t>(i + 1));
      for (int64_t v = b; v < e; ++v)
        for (vid_t u : g.in_neighbors(p.new_to_old[v])) ps.cut_in_edges += part_of[u] != i ? 1 : 0;
      ps.weight = static_cast<double>(ps.in_edges) + static_cast<double>(ps.vertices) * c;
      progress.add(ps.in_edges);
    }
  }
}

// The masks path: one pass over all in-edges, in parallel over blocks of
// destinations (not over chunks or partitions: with m = 4 the partitions'
// pass of the markers path ran on 4 threads whatever the machine had; 46.9 s
// of a 131 s partition at 1.2 B edges on 16 cores). Each source (old id)
// gets a bit set of the m·n chunks it feeds, set with an atomic OR; a second
// pass over the sources counts the bits per chunk and per partition. Every
// figure is an integer sum: the same for any thread count and equal to the
// markers path's (tested).
constexpr int64_t kMaskBlock = 4096;
constexpr int64_t kMaskBudgetBytes = int64_t{2} << 30;

int64_t mask_words(const Partition& p) { return (static_cast<int64_t>(p.m()) * p.n() + 63) / 64; }

void fill_by_masks(const GraphView& g, const Partition& p, PartitionStats& s, Progress& progress) {
  const int m = p.m(), n = p.n();
  const int64_t k = static_cast<int64_t>(m) * n, words = mask_words(p), nv = p.num_vertices;
  std::vector<uint64_t> mask;
  resize_for_overwrite(mask, static_cast<size_t>(nv * words));
  parallel_blocks(nv * words, [&](int64_t b, int64_t e) { std::fill(mask.begin() + b, mask.begin() + e, 0); });
  std::vector<int64_t> in_edges(k, 0), cut_chunk(k, 0), cut_part(k, 0), nbr_chunk(k, 0), nbr_part(m, 0);
  const int64_t blocks = (nv + kMaskBlock - 1) / kMaskBlock;
#pragma omp parallel
  {
    std::vector<int64_t> my_edges(k, 0), my_cut_chunk(k, 0), my_cut_part(k, 0);
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t vb = blk * kMaskBlock, ve = std::min(nv, vb + kMaskBlock);
      // The chunk of vb: the last chunk starting at or before it (empty chunks skipped).
      int64_t c = std::upper_bound(p.chunk_offsets.begin(), p.chunk_offsets.end(), vb) - p.chunk_offsets.begin() - 1;
      int64_t edges = 0;
      for (int64_t v = vb; v < ve; ++v) {
        while (v >= p.chunk_offsets[c + 1]) ++c;
        const int64_t cb = p.chunk_offsets[c], ce = p.chunk_offsets[c + 1];
        const int64_t pb = p.part_offsets[c / n], pe = p.part_offsets[c / n + 1];
        const uint64_t bit = uint64_t{1} << (c % 64);
        const int64_t word = c / 64;
        const auto row = g.in_neighbors(p.new_to_old[v]);
        int64_t out_chunk = 0, out_part = 0;
        for (vid_t u : row) {
          const int64_t nu = p.old_to_new[u];
          out_chunk += nu < cb || nu >= ce ? 1 : 0;
          out_part += nu < pb || nu >= pe ? 1 : 0;
          uint64_t& w = mask[static_cast<size_t>(static_cast<int64_t>(u) * words + word)];
          std::atomic_ref<uint64_t> a(w);
          // Most sources feed a chunk many times: read before writing.
          if (!(a.load(std::memory_order_relaxed) & bit)) a.fetch_or(bit, std::memory_order_relaxed);
        }
        my_edges[c] += static_cast<int64_t>(row.size());
        my_cut_chunk[c] += out_chunk;
        my_cut_part[c] += out_part;
        edges += static_cast<int64_t>(row.size());
      }
      progress.add(edges);
    }
#pragma omp critical
    for (int64_t j = 0; j < k; ++j) {
      in_edges[j] += my_edges[j];
      cut_chunk[j] += my_cut_chunk[j];
      cut_part[j] += my_cut_part[j];
    }
  }
  // The implicit barrier above: every mask is complete.
#pragma omp parallel
  {
    std::vector<int64_t> my_chunk(k, 0), my_part(m, 0);
#pragma omp for schedule(static) nowait
    for (int64_t u = 0; u < nv; ++u) {
      int64_t last_part = -1;
      for (int64_t w = 0; w < words; ++w) {
        // Bits ascend with the chunk, so partitions come in ascending order.
        for (uint64_t bits = mask[static_cast<size_t>(u * words + w)]; bits != 0; bits &= bits - 1) {
          const int64_t c = w * 64 + std::countr_zero(bits);
          ++my_chunk[c];
          if (c / n != last_part) {
            last_part = c / n;
            ++my_part[last_part];
          }
        }
      }
    }
#pragma omp critical
    {
      for (int64_t j = 0; j < k; ++j) nbr_chunk[j] += my_chunk[j];
      for (int i = 0; i < m; ++i) nbr_part[i] += my_part[i];
    }
  }
  progress.add(g.num_edges);  // the markers path counts the edges twice (chunks, then partitions)
  const double cw = p.params.chunk_vertex_weight;
  s.chunks.resize(static_cast<size_t>(k));
  s.parts.assign(m, PartStats{});
  for (int64_t j = 0; j < k; ++j) {
    ChunkStats& cs = s.chunks[j];
    cs.part = static_cast<int>(j / n);
    cs.chunk = static_cast<int>(j % n);
    cs.vertices = p.chunk_offsets[j + 1] - p.chunk_offsets[j];
    cs.in_edges = in_edges[j];
    cs.in_neighbors = nbr_chunk[j];
    cs.cut_in_edges = cut_chunk[j];
    cs.weight = static_cast<double>(cs.in_edges) + static_cast<double>(cs.vertices) * cw;
    PartStats& ps = s.parts[cs.part];
    ps.in_edges += in_edges[j];
    ps.cut_in_edges += cut_part[j];
  }
  for (int i = 0; i < m; ++i) {
    PartStats& ps = s.parts[i];
    ps.vertices = p.part_offsets[i + 1] - p.part_offsets[i];
    ps.in_neighbors = nbr_part[i];
    ps.weight = static_cast<double>(ps.in_edges) + static_cast<double>(ps.vertices) * cw;
  }
}

void summarize(PartitionStats& s) {
  const double nv = static_cast<double>(std::max<int64_t>(1, s.num_vertices));
  int64_t replicas = 0, part_replicas = 0;
  for (const ChunkStats& c : s.chunks) {
    replicas += c.in_neighbors;
    s.chunk_edge_cut += c.cut_in_edges;
  }
  for (const PartStats& q : s.parts) {
    part_replicas += q.in_neighbors;
    s.edge_cut += q.cut_in_edges;
  }
  s.alpha = static_cast<double>(replicas) / nv;
  s.alpha_parts = static_cast<double>(part_replicas) / nv;
  s.edge_cut_fraction = s.num_edges > 0 ? static_cast<double>(s.edge_cut) / static_cast<double>(s.num_edges) : 0;
  s.chunk_edge_cut_fraction =
      s.num_edges > 0 ? static_cast<double>(s.chunk_edge_cut) / static_cast<double>(s.num_edges) : 0;
  const size_t m = s.parts.size();
  s.imbalance = max_over_mean(m, [&](size_t i) { return s.parts[i].weight; });
  s.vertex_imbalance = max_over_mean(m, [&](size_t i) { return static_cast<double>(s.parts[i].vertices); });
  s.edge_imbalance = max_over_mean(m, [&](size_t i) { return static_cast<double>(s.parts[i].in_edges); });
  s.chunk_imbalance = max_over_mean(s.chunks.size(), [&](size_t k) { return s.chunks[k].weight; });
}

}  // namespace

PartitionStats compute_partition_stats(const GraphView& g, const Partition& p, StatsMethod method) {
  HT_CHECK(g.num_vertices == p.num_vertices && g.num_edges == p.num_edges,
           "partition ({} vertices, {} edges) does not fit the graph ({} vertices, {} edges)", p.num_vertices,
           p.num_edges, g.num_vertices, g.num_edges);
  HT_CHECK(static_cast<int64_t>(p.old_to_new.size()) == p.num_vertices, "partition without old_to_new ({} of {} ids)",
           p.old_to_new.size(), p.num_vertices);
  PartitionStats s;
  s.num_vertices = g.num_vertices;
  s.num_edges = g.num_edges;
  Progress progress("statistics", 2 * g.num_edges, "edges");
  if (method == StatsMethod::automatic)
    method = static_cast<int64_t>(sizeof(uint64_t)) * mask_words(p) * p.num_vertices <= kMaskBudgetBytes
                 ? StatsMethod::masks
                 : StatsMethod::markers;
  if (method == StatsMethod::masks) {
    fill_by_masks(g, p, s, progress);
  } else {
    fill_chunks(g, p, s, progress);
    fill_parts(g, p, s, progress);
  }
  progress.finish();
  summarize(s);
  return s;
}

std::string format_partition_stats(const PartitionStats& s, int chunks_per_part, int max_chunk_rows) {
  std::string out;
  const bool per_chunk = static_cast<int64_t>(s.chunks.size()) <= max_chunk_rows;
  out += fmt::format("{:>6} {:>6} {:>12} {:>14} {:>13} {:>16}{}\n", "part", "chunk", "vertices", "in-edges",
                     "in-neighbors", "weight", per_chunk ? "" : "   chunk weight min..max");
  for (size_t i = 0; i < s.parts.size(); ++i) {
    const auto first = s.chunks.begin() + static_cast<int64_t>(i) * chunks_per_part;
    if (per_chunk && chunks_per_part > 1) {
      for (auto c = first; c != first + chunks_per_part; ++c)
        out += fmt::format("{:>6} {:>6} {:>12} {:>14} {:>13} {:>16.1f}\n", c->part, c->chunk, c->vertices,
                           c->in_edges, c->in_neighbors, c->weight);
    }
    const PartStats& q = s.parts[i];
    std::string range;
    if (!per_chunk) {
      const auto [lo, hi] = std::minmax_element(first, first + chunks_per_part,
                                                [](const ChunkStats& a, const ChunkStats& b) { return a.weight < b.weight; });
      range = fmt::format("   {:.1f}..{:.1f}", lo->weight, hi->weight);
    }
    out += fmt::format("{:>6} {:>6} {:>12} {:>14} {:>13} {:>16.1f}{}\n", i, "all", q.vertices, q.in_edges,
                       q.in_neighbors, q.weight, range);
  }
  out += fmt::format("edge cut: {} of {} edges ({:.2f}%); between chunks: {} ({:.2f}%)\n", s.edge_cut, s.num_edges,
                     100.0 * s.edge_cut_fraction, s.chunk_edge_cut, 100.0 * s.chunk_edge_cut_fraction);
  out += fmt::format("replication factor alpha: {:.4f} over m*n = {} chunks; {:.4f} over m = {} partitions\n",
                     s.alpha, s.chunks.size(), s.alpha_parts, s.parts.size());
  out += fmt::format("balance (max/mean): computation {:.4f}, vertices {:.4f}, in-edges {:.4f}; chunks {:.4f}\n",
                     s.imbalance, s.vertex_imbalance, s.edge_imbalance, s.chunk_imbalance);
  return out;
}

void write_partition_stats_json(JsonWriter& w, const PartitionStats& s) {
  w.field("num_vertices", s.num_vertices).field("num_edges", s.num_edges);
  w.field("edge_cut", s.edge_cut).field("edge_cut_fraction", s.edge_cut_fraction);
  w.field("chunk_edge_cut", s.chunk_edge_cut).field("chunk_edge_cut_fraction", s.chunk_edge_cut_fraction);
  w.field("alpha", s.alpha).field("alpha_parts", s.alpha_parts);
  w.field("imbalance", s.imbalance).field("vertex_imbalance", s.vertex_imbalance);
  w.field("edge_imbalance", s.edge_imbalance).field("chunk_imbalance", s.chunk_imbalance);
  w.key("parts").begin_array();
  for (size_t i = 0; i < s.parts.size(); ++i) {
    const PartStats& q = s.parts[i];
    w.begin_object().field("part", static_cast<int64_t>(i)).field("vertices", q.vertices).field("in_edges", q.in_edges);
    w.field("in_neighbors", q.in_neighbors).field("cut_in_edges", q.cut_in_edges).field("weight", q.weight);
    w.end_object();
  }
  w.end_array();
  w.key("chunks").begin_array();
  for (const ChunkStats& c : s.chunks) {
    w.begin_object().field("part", c.part).field("chunk", c.chunk).field("vertices", c.vertices);
    w.field("in_edges", c.in_edges).field("in_neighbors", c.in_neighbors).field("cut_in_edges", c.cut_in_edges);
    w.field("weight", c.weight);
    w.end_object();
  }
  w.end_array();
}

}  // namespace ht
