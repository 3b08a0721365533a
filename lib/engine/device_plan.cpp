#include "engine/device_plan.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/kernel_counters.hpp"
#include "core/log.hpp"
#include "core/radix_sort.hpp"
#include "core/thread_teams.hpp"
#include "core/timer.hpp"
#include "engine/pull_lists.hpp"
#include "engine/step_scratch.hpp"

namespace ht {

namespace {

// Threads a parallel loop started here gets: none beyond this one where the
// nesting ends (inside build_device_plans' loop over the steps when each
// step has one thread).
int64_t loop_threads() {
  return omp_get_active_level() < omp_get_max_active_levels() ? omp_get_max_threads() : 1;
}

// The transpose of a step's edges: t_offsets over the `rows` source rows and
// t_edge, each row's edges in ascending id. A stable counting sort by row:
// the edge list cut into `parts` contiguous pieces, each counted per row by
// one thread, each then placed in order from its own start in every row, so
// that a row's edges come out ascending with no atomics and no sort, the
// same at any thread count. The parts' counters (parts x rows) never
// outweigh the edge list: at most ne / rows parts. Counting and placing are
// apart so that a packed step knows its transpose's sizes (its long rows)
// before its block is taken, and places the edges straight into it.
// Parts of a transpose of `ne` edges over `rows` rows with `threads` threads.
int64_t transpose_parts(int64_t ne, int64_t rows, int64_t threads) {
  return std::clamp<int64_t>(std::min(threads, ne / std::max<int64_t>(rows, 1)), 1, 1 << 10);
}

class EdgeTranspose {
 public:
  // Counts the edges by row(e); an edge whose row is `rows` or more is not
  // counted, the last such edge in beyond() (-1: none). The counters are
  // scratch (a team's workspace, kept across its steps).
  template <typename Row>
  EdgeTranspose(int64_t ne, int64_t rows, Row row, ScratchArray<uint32_t>& counters) : ne_(ne), rows_(rows) {
    HT_CHECK(ne <= int64_t{std::numeric_limits<uint32_t>::max()}, "a step of {} edges: edge ids are 32-bit", ne);
    parts_ = transpose_parts(ne, rows, loop_threads());
    // at[p * rows + r]: part p's count, then slot. Scratch kept across the
    // steps (hundreds of MB per step at friendster size, once fresh pages
    // per step: bench/RESULTS.md, session 13), zeroed here by the step's
    // threads, each part mostly by the thread that counts it.
    const int64_t cells = parts_ * rows;
    at_ = counters.take(cells);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < parts_ * kZeroPieces; ++p)
      std::fill(at_ + cells * p / (parts_ * kZeroPieces), at_ + cells * (p + 1) / (parts_ * kZeroPieces), 0u);
    int64_t beyond = -1;
#pragma omp parallel for schedule(static, 1) if (parts_ > 1) reduction(max : beyond)
    for (int64_t p = 0; p < parts_; ++p) {
      uint32_t* c = at_ + p * rows;
      for (int64_t e = piece(p); e < piece(p + 1); ++e) {
        const uint32_t r = row(e);
        if (r < rows) ++c[r];
        else beyond = std::max(beyond, e);
      }
    }
    beyond_ = beyond;
  }
  int64_t beyond() const { return beyond_; }
  // The long rows' segments (split_long_rows) the offsets will give: a
  // packed step lays its block out before the offsets are written there.
  int64_t long_row_segments() const {
    HT_ASSERT(beyond_ < 0);
    int64_t segments = 0;
#pragma omp parallel for schedule(static) reduction(+ : segments)
    for (int64_t r = 0; r < rows_; ++r) {
      int64_t sum = 0;
      for (int64_t p = 0; p < parts_; ++p) sum += at_[p * rows_ + r];
      if (sum > kLongRowEdges) segments += (sum + kLongRowEdges - 1) / kLongRowEdges;
    }
    return segments;
  }
  // t_offsets[0, rows + 1) from the counts (straight into a packed step's
  // block: no array of its own, no copy), the counters turned into each
  // part's first slot in every row.
  void offsets_into(int64_t* t_offsets) {
    HT_ASSERT(beyond_ < 0);
    t_offsets[0] = 0;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows_; ++r) {
      int64_t sum = 0;
      for (int64_t p = 0; p < parts_; ++p) sum += at_[p * rows_ + r];
      t_offsets[r + 1] = sum;
    }
    parallel_inclusive_scan(std::span<int64_t>(t_offsets, static_cast<size_t>(rows_) + 1));
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows_; ++r) {
      auto slot = static_cast<uint32_t>(t_offsets[r]);
      for (int64_t p = 0; p < parts_; ++p) slot += std::exchange(at_[p * rows_ + r], slot);
    }
  }
  // t_edge[0, ne): each row's edges, ascending (the same row(e) as counted).
  template <typename Row>
  void place(Row row, uint32_t* t_edge) {
    HT_ASSERT(beyond_ < 0);
#pragma omp parallel for schedule(static, 1) if (parts_ > 1)
    for (int64_t p = 0; p < parts_; ++p) {
      uint32_t* c = at_ + p * rows_;
      for (int64_t e = piece(p); e < piece(p + 1); ++e) t_edge[c[row(e)]++] = static_cast<uint32_t>(e);
    }
  }

 private:
  // Pieces per part of the counters' zeroing (a part's thread takes them
  // when the threads are as many as the parts; all threads share them when
  // the parts are fewer).
  static constexpr int64_t kZeroPieces = 4;
  int64_t piece(int64_t p) const { return ne_ * p / parts_; }
  int64_t ne_, rows_, parts_ = 1, beyond_ = -1;
  uint32_t* at_ = nullptr;
};

void transpose_edges(std::span<const uint32_t> src, int64_t rows, std::vector<int64_t>& t_offsets,
                     std::vector<uint32_t>& t_edge) {
  auto row = [&](int64_t e) { return src[e]; };
  ScratchArray<uint32_t> counters;
  EdgeTranspose tr(static_cast<int64_t>(src.size()), rows, row, counters);
  HT_ASSERT(tr.beyond() < 0);  // (make_topology checked the rows)
  resize_for_overwrite(t_offsets, static_cast<size_t>(rows) + 1);
  tr.offsets_into(t_offsets.data());
  resize_for_overwrite(t_edge, src.size());  // (every entry written below)
  tr.place(row, t_edge.data());
}

}  // namespace

namespace {

// Where a step's per-edge and per-destination lists go: a HostTopology's
// vectors (make_topology) or the slices of the step's block (build_step).
// weight null: unweighted; src_key null: no edge keys.
struct TopologyOut {
  uint32_t *src, *dst_row, *edge_dst;
  float* weight;
  int64_t *src_key, *dst_key;
};

// The source row of edge e in the step's buffer: src_local (baseline) or
// src_merged, merged rows from `remote_row0` on `remote_shift` rows further.
struct SourceRows {
  SourceRows(const ChunkPlan& s, CommMode mode, int64_t remote_row0, int64_t remote_shift)
      : src(mode == CommMode::baseline ? s.src_local : s.src_merged),
        shift_from(remote_shift > 0 ? static_cast<uint32_t>(remote_row0) : UINT32_MAX),
        shift(static_cast<uint32_t>(remote_shift)) {}
  uint32_t operator()(int64_t e) const { return src[e] >= shift_from ? src[e] + shift : src[e]; }
  const std::vector<uint32_t>& src;
  uint32_t shift_from, shift;
};

// What the per-edge lists are derived from: a plan's step (build_step,
// make_topology) or a step's block (derive_topology_on_host).
struct StepEdges {
  int64_t num_dst = 0, num_edges = 0, dst_begin = 0;
  const int64_t* offsets = nullptr;
  const vid_t* src_vid = nullptr;
  int part = 0, chunk = 0;
};

StepEdges edges_of(const ChunkPlan& s) {
  return {s.num_dst(), s.num_edges(), s.dst_begin, s.offsets.data(), s.src_vid.data(), s.part, s.chunk};
}

// The step's lists but the offsets and the transpose, into `t` (sized by the
// caller), each destination's self-loop checked and every source row below
// num_src_rows. Parallel within the step (OpenMP; inside build_device_plans'
// loop over the steps, with the threads the step gets there): every loop
// writes its own elements, so the result is the same at any thread count.
template <typename Row>
void fill_topology(const StepEdges& s, const Row& row, int64_t num_src_rows, const EdgeKeys& keys,
                   const TopologyOut& t) {
  const int64_t nd = s.num_dst;
  const bool mean = !keys.inv_deg.empty();  // SAGE's rule, else GCN's
  HT_ASSERT(!mean || keys.inv_sqrt_deg.empty());
  const bool weighted = !keys.inv_sqrt_deg.empty() || mean;
  HT_ASSERT(weighted == (t.weight != nullptr));
  int64_t no_self_loop = -1, beyond = -1;  // the first bad destination / edge (checked after the loops)
#pragma omp parallel for schedule(dynamic, 4096) reduction(max : no_self_loop, beyond)
  for (int64_t d = 0; d < nd; ++d) {
    const vid_t v = static_cast<vid_t>(s.dst_begin + d);
    const float dst_w = !weighted ? 0.0f : mean ? keys.inv_deg[s.dst_begin + d] : keys.inv_sqrt_deg[s.dst_begin + d];
    t.dst_row[d] = UINT32_MAX;
    for (int64_t e = s.offsets[d]; e < s.offsets[d + 1]; ++e) {
      t.src[e] = row(e);
      if (t.src[e] >= num_src_rows) beyond = std::max(beyond, e);
      t.edge_dst[e] = static_cast<uint32_t>(d);
      if (s.src_vid[e] == v) t.dst_row[d] = t.src[e];  // the self-loop reads the destination's own row
      if (mean) t.weight[e] = s.src_vid[e] == v ? 0.0f : dst_w;  // the plan's self-loop is not a neighbor
      else if (weighted) t.weight[e] = keys.inv_sqrt_deg[s.src_vid[e]] * dst_w;
    }
    if (t.dst_row[d] == UINT32_MAX) no_self_loop = std::max(no_self_loop, d);
  }
  HT_CHECK(no_self_loop < 0, "plan step ({}, {}): destination {} has no self-loop", s.part, s.chunk,
           s.dst_begin + no_self_loop);
  HT_CHECK(beyond < 0, "plan step ({}, {}): edge reads row {} beyond the buffer ({} rows)", s.part, s.chunk,
           beyond < 0 ? 0 : t.src[beyond], num_src_rows);
  if (t.src_key) {
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < s.num_edges; ++e) {
      t.src_key[e] = keys.orig_id[s.src_vid[e]];
      t.dst_key[e] = keys.orig_id[s.dst_begin + t.edge_dst[e]];
    }
  }
}

bool weighted(const EdgeKeys& keys) { return !keys.inv_sqrt_deg.empty() || !keys.inv_deg.empty(); }

}  // namespace

HostTopology make_topology(const ChunkPlan& s, CommMode mode, int64_t num_src_rows, const EdgeKeys& keys,
                           int64_t remote_row0, int64_t remote_shift) {
  HostTopology t;
  const int64_t nd = s.num_dst(), ne = s.num_edges();
  t.num_dst = nd;
  t.num_src_rows = num_src_rows;
  t.offsets = copy_to_vector(std::span<const int64_t>(s.offsets));
  const SourceRows row(s, mode, remote_row0, remote_shift);
  HT_CHECK(static_cast<int64_t>(row.src.size()) == ne, "plan step ({}, {}) has inconsistent topology arrays", s.part,
           s.chunk);
  // Per-edge lists: huge pages faulted in by the step's threads
  // (resize_for_overwrite), not zeroed by one thread 4 KiB page by page.
  resize_for_overwrite(t.src, static_cast<size_t>(ne));
  resize_for_overwrite(t.dst_row, static_cast<size_t>(nd));
  resize_for_overwrite(t.edge_dst, static_cast<size_t>(ne));
  if (weighted(keys)) resize_for_overwrite(t.weight, static_cast<size_t>(ne));
  if (!keys.orig_id.empty()) {
    resize_for_overwrite(t.src_key, static_cast<size_t>(ne));
    resize_for_overwrite(t.dst_key, static_cast<size_t>(ne));
  }
  fill_topology(edges_of(s), row, num_src_rows, keys,
                {t.src.data(), t.dst_row.data(), t.edge_dst.data(), t.weight.empty() ? nullptr : t.weight.data(),
                 t.src_key.empty() ? nullptr : t.src_key.data(), t.dst_key.empty() ? nullptr : t.dst_key.data()});
  // Transpose: the edges of each source row, ascending edge id.
  transpose_edges(t.src, num_src_rows, t.t_offsets, t.t_edge);
  split_long_rows(t.offsets, t.seg_row, t.seg_edge);
  split_long_rows(t.t_offsets, t.t_seg_row, t.t_seg_edge);
  return t;
}

void split_long_rows(std::span<const int64_t> offsets, std::vector<uint32_t>& seg_row, std::vector<int64_t>& seg_edge) {
  seg_row.clear();
  seg_edge.clear();
  for (size_t r = 0; r + 1 < offsets.size(); ++r) {
    const int64_t b = offsets[r], edges = offsets[r + 1] - b;
    if (edges <= kLongRowEdges) continue;
    const int64_t pieces = (edges + kLongRowEdges - 1) / kLongRowEdges;
    for (int64_t k = 0; k < pieces; ++k) {
      seg_row.push_back(static_cast<uint32_t>(r));
      seg_edge.push_back(b + edges * k / pieces);
    }
  }
}

DevTopology upload_topology(Device& dev, const HostTopology& t) {
  DevTopology d;
  d.num_dst = t.num_dst;
  d.num_edges = static_cast<int64_t>(t.src.size());
  d.num_src_rows = t.num_src_rows;
  d.offsets = dev.upload(std::span<const int64_t>(t.offsets));
  d.src = dev.upload(std::span<const uint32_t>(t.src));
  if (!t.weight.empty()) d.weight = dev.upload(std::span<const float>(t.weight));
  d.dst_row = dev.upload(std::span<const uint32_t>(t.dst_row));
  d.t_offsets = dev.upload(std::span<const int64_t>(t.t_offsets));
  d.t_edge = dev.upload(std::span<const uint32_t>(t.t_edge));
  d.edge_dst = dev.upload(std::span<const uint32_t>(t.edge_dst));
  if (!t.src_key.empty()) {
    d.edge_src_key = dev.upload(std::span<const int64_t>(t.src_key));
    d.edge_dst_key = dev.upload(std::span<const int64_t>(t.dst_key));
  }
  // The segments from the offsets (a topology built by hand has none listed):
  // the kernels leave long rows to them.
  auto segments = [&dev](const std::vector<int64_t>& offsets, DevIdx& row, DevArray<int64_t>& edge) {
    std::vector<uint32_t> seg_row;
    std::vector<int64_t> seg_edge;
    split_long_rows(offsets, seg_row, seg_edge);
    if (seg_row.empty()) return;
    row = dev.upload(std::span<const uint32_t>(seg_row));
    edge = dev.upload(std::span<const int64_t>(seg_edge));
  };
  segments(t.offsets, d.seg_row, d.seg_edge);
  segments(t.t_offsets, d.t_seg_row, d.t_seg_edge);
  return d;
}

namespace {

std::vector<PeerRange> peer_ranges(const ChunkPlan& s) {
  std::vector<PeerRange> out;
  for (int64_t r = 0; r < static_cast<int64_t>(s.remote_gpu.size()); ++r) {
    if (out.empty() || out.back().peer != s.remote_gpu[r]) out.push_back({s.remote_gpu[r], r, 0});
    ++out.back().count;
  }
  return out;
}

// Lays typed arrays out one after another, each 256-byte aligned.
class Packer {
 public:
  template <typename T>
  Slice add(int64_t count) {
    const Slice sl{end_, count};
    end_ = (end_ + count * static_cast<int64_t>(sizeof(T)) + 255) / 256 * 256;
    return sl;
  }
  int64_t bytes() const { return std::max<int64_t>(end_, 256); }

 private:
  int64_t end_ = 0;
};

template <typename T>
T* slice_data(std::byte* base, Slice sl) {
  return reinterpret_cast<T*>(base + sl.offset);
}

// Zeros from the end of a slice's `count` elements to the next slice.
template <typename T>
void pad(std::byte* base, Slice sl) {
  const size_t bytes = static_cast<size_t>(sl.count) * sizeof(T);
  std::memset(base + sl.offset + bytes, 0, (bytes + 255) / 256 * 256 - bytes);
}

// A slice's elements, and zeros up to the next slice (Packer's 256-byte
// alignment): every byte of the block is written, whatever memory it is.
template <typename T>
void put(std::byte* base, Slice sl, std::span<const T> v) {
  HT_ASSERT(static_cast<int64_t>(v.size()) == sl.count);
  const size_t bytes = v.size() * sizeof(T);
  if (bytes >= (size_t{1} << 20)) parallel_copy(base + sl.offset, v.data(), bytes);  // the step's threads
  else if (bytes > 0) std::memcpy(base + sl.offset, v.data(), bytes);
  pad<T>(base, sl);
}

template <typename T>
void put(std::byte* base, Slice sl, const std::vector<T>& v) {
  put(base, sl, std::span<const T>(v));
}

// A step's long rows' segments in both directions (split_long_rows).
struct SegmentLists {
  std::vector<uint32_t> row, t_row;
  std::vector<int64_t> edge, t_edge;
};

template <typename T>
DevArray<T> at(DevArray<std::byte> base, Slice sl) {
  return {reinterpret_cast<T*>(base.data + sl.offset), sl.count};
}

// The host rows each batch loads and returns, in the comm mode's terms:
// their counts here, the lists written straight into the step's block
// (write_index_lists; no vectors copied in afterwards).
struct StepIndexLists {
  int64_t loads = 0, flushes = 0;
  std::span<const vid_t> flush_vids_host;
  int64_t reused = 0;
};

StepIndexLists index_lists(const ChunkPlan& s, CommMode mode) {
  StepIndexLists x;
  switch (mode) {
    case CommMode::baseline:
      x.loads = x.flushes = static_cast<int64_t>(s.nbr.size());
      x.flush_vids_host = s.nbr;
      break;
    case CommMode::p2p:
      x.loads = x.flushes = static_cast<int64_t>(s.trans_vid.size());
      x.flush_vids_host = s.trans_vid;
      break;
    case CommMode::full:
      x.reused = std::count_if(s.trans_reused.begin(), s.trans_reused.end(), [](uint8_t r) { return r != 0; });
      x.loads = static_cast<int64_t>(s.trans_vid.size()) - x.reused;
      x.flushes = static_cast<int64_t>(s.flush_slot.size());
      x.flush_vids_host = s.flush_vid;
      break;
  }
  return x;
}

// 0, 1, ... into a slice (baseline's buffer rows), and its padding.
void put_iota(std::byte* base, Slice sl) {
  uint32_t* out = slice_data<uint32_t>(base, sl);
  parallel_blocks(sl.count, [&](int64_t b, int64_t e) { std::iota(out + b, out + e, static_cast<uint32_t>(b)); });
  pad<uint32_t>(base, sl);
}

// The load and flush lists into the block: baseline's neighbor rows in
// order, p2p's transition rows, full mode's transition rows not kept in
// place (trans_reused) and its flush list.
void write_index_lists(const DeviceStep& ds, std::byte* base, const ChunkPlan& s, CommMode mode) {
  switch (mode) {
    case CommMode::baseline:
      put(base, ds.load_vids, std::span<const uint32_t>(s.nbr));
      put_iota(base, ds.load_rows);
      put(base, ds.flush_vids, std::span<const uint32_t>(s.nbr));
      put_iota(base, ds.flush_rows);
      return;
    case CommMode::p2p:
      put(base, ds.load_vids, std::span<const uint32_t>(s.trans_vid));
      put(base, ds.load_rows, std::span<const uint32_t>(s.trans_slot));
      put(base, ds.flush_vids, std::span<const uint32_t>(s.trans_vid));
      put(base, ds.flush_rows, std::span<const uint32_t>(s.trans_slot));
      return;
    case CommMode::full: break;
  }
  uint32_t* vids = slice_data<uint32_t>(base, ds.load_vids);
  uint32_t* rows = slice_data<uint32_t>(base, ds.load_rows);
  int64_t k = 0;
  for (size_t t = 0; t < s.trans_vid.size(); ++t) {
    if (s.trans_reused[t]) continue;
    vids[k] = s.trans_vid[t];
    rows[k++] = s.trans_slot[t];
  }
  HT_ASSERT(k == ds.load_vids.count);
  pad<uint32_t>(base, ds.load_vids);
  pad<uint32_t>(base, ds.load_rows);
  put(base, ds.flush_rows, std::span<const uint32_t>(s.flush_slot));
  put(base, ds.flush_vids, std::span<const uint32_t>(s.flush_vid));
}

// The load list (ascending: the owner's transition rows) cut by the batch of
// this device that produces each row (its chunk's id range).
std::vector<Slice> load_pieces(std::span<const uint32_t> v, const Plan& plan, int gpu) {
  std::vector<Slice> out;
  for (int k = 0; k < plan.n; ++k) {
    const ChunkPlan& c = plan.step(k, gpu);
    const auto lo = std::lower_bound(v.begin(), v.end(), static_cast<uint32_t>(c.dst_begin));
    const auto hi = std::lower_bound(v.begin(), v.end(), static_cast<uint32_t>(c.dst_end));
    out.push_back({lo - v.begin(), hi - lo});
  }
  return out;
}

// The sizes of a step's topology lists (what a packed step lays out).
struct TopologySizes {
  int64_t num_dst = 0, num_edges = 0, num_src_rows = 0;
  bool weighted = false, keys = false;
  int64_t segments = 0, t_segments = 0;  // long rows' segments, both directions
};

// The block: first what the host packs in every case (the offsets, src, the
// forward segments, the index and pull lists), then what a derived step
// leaves to its device (DeviceStep::derived). Returns the first part's bytes.
int64_t lay_out(DeviceStep& ds, Packer& pk, const TopologySizes& t, const StepIndexLists& x, size_t remote,
                const PullLists& early) {
  ds.num_dst = t.num_dst;
  ds.num_edges = t.num_edges;
  ds.num_src_rows = t.num_src_rows;
  const int64_t ne = t.num_edges, weights = t.weighted ? ne : 0, keys = t.keys ? ne : 0;
  ds.offsets = pk.add<int64_t>(t.num_dst + 1);
  ds.src = pk.add<uint32_t>(ne);
  ds.seg_row = pk.add<uint32_t>(t.segments);
  ds.seg_edge = pk.add<int64_t>(t.segments);
  ds.load_vids = pk.add<uint32_t>(x.loads);
  ds.load_rows = pk.add<uint32_t>(x.loads);
  ds.remote_slots = pk.add<uint32_t>(static_cast<int64_t>(remote));
  ds.flush_rows = pk.add<uint32_t>(x.flushes);
  ds.flush_vids = pk.add<uint32_t>(x.flushes);
  ds.pull_src = pk.add<uint32_t>(static_cast<int64_t>(early.src.size()));
  ds.pull_dst = pk.add<uint32_t>(static_cast<int64_t>(early.dst.size()));
  const int64_t host_part = pk.bytes();
  ds.weight = pk.add<float>(weights);
  ds.dst_row = pk.add<uint32_t>(t.num_dst);
  ds.t_offsets = pk.add<int64_t>(t.num_src_rows + 1);
  ds.t_edge = pk.add<uint32_t>(ne);
  ds.edge_dst = pk.add<uint32_t>(ne);
  ds.src_key = pk.add<int64_t>(keys);
  ds.dst_key = pk.add<int64_t>(keys);
  ds.t_seg_row = pk.add<uint32_t>(t.t_segments);
  ds.t_seg_edge = pk.add<int64_t>(t.t_segments);
  return host_part;
}

// The lists of a step that are copied into its block: the offsets, the
// long rows' segments, the index and pull lists. (The per-edge lists,
// dst_row and the transpose's offsets are written there in place: build_step.)
void pack_lists(const DeviceStep& ds, std::byte* base, const ChunkPlan& s, CommMode mode, const SegmentLists& seg,
                const PullLists& early) {
  put(base, ds.offsets, std::span<const int64_t>(s.offsets));
  put(base, ds.seg_row, seg.row);
  put(base, ds.seg_edge, seg.edge);
  if (!ds.derived) {  // (a derived step's are its device's)
    put(base, ds.t_seg_row, seg.t_row);
    put(base, ds.t_seg_edge, seg.t_edge);
  }
  write_index_lists(ds, base, s, mode);
  if (ds.remote_slots.count) put(base, ds.remote_slots, s.remote_slot);  // (an empty slice has no bytes)
  put(base, ds.pull_src, early.src);
  put(base, ds.pull_dst, early.dst);
}

}  // namespace

StepLists DeviceStep::bind(DevArray<std::byte> b) const {
  StepLists l;
  DevTopology& t = l.topo;
  t.num_dst = num_dst;
  t.num_edges = num_edges;
  t.num_src_rows = num_src_rows;
  t.offsets = at<int64_t>(b, offsets);
  t.src = at<uint32_t>(b, src);
  t.weight = at<float>(b, weight);
  t.dst_row = at<uint32_t>(b, dst_row);
  t.t_offsets = at<int64_t>(b, t_offsets);
  t.t_edge = at<uint32_t>(b, t_edge);
  t.edge_dst = at<uint32_t>(b, edge_dst);
  t.edge_src_key = at<int64_t>(b, src_key);
  t.edge_dst_key = at<int64_t>(b, dst_key);
  t.seg_row = at<uint32_t>(b, seg_row);
  t.seg_edge = at<int64_t>(b, seg_edge);
  t.t_seg_row = at<uint32_t>(b, t_seg_row);
  t.t_seg_edge = at<int64_t>(b, t_seg_edge);
  l.load_vids = at<uint32_t>(b, load_vids);
  l.load_rows = at<uint32_t>(b, load_rows);
  l.remote_slots = at<uint32_t>(b, remote_slots);
  l.flush_rows = at<uint32_t>(b, flush_rows);
  l.flush_vids = at<uint32_t>(b, flush_vids);
  l.pull_src = at<uint32_t>(b, pull_src);
  l.pull_dst = at<uint32_t>(b, pull_dst);
  return l;
}

namespace {

// One step of device `gpu` (build_device_plans): topology, index lists, packed
// into a block from `alloc` (called one at a time).
// Seconds of a step's parts (build_device_plans' debug log): topology (its
// counts, and its lists written into the block), index lists, pull lists,
// block, packing (the lists copied into the block), load pieces.
using StepTimes = std::array<double, 6>;

// A team's scratch for the steps it builds (step_scratch.hpp), taken from a
// WorkspacePool for one step at a time.
struct StepWorkspace {
  ScratchArray<uint32_t> counters;  // the transpose's counters (parts x rows)
  SegmentLists seg;
  PullScratch pull;
};

// The shapes of the steps a call builds, for reserving each workspace at the
// largest step's sizes when it is made: no step after maps more memory.
struct StepMaxima {
  std::vector<std::pair<int64_t, int64_t>> edges_rows;  // per step: edges, buffer rows
  int64_t team_threads = 1;                             // the most threads a step gets (run_steps)
  int64_t remote = 0;
  int64_t where = 0;  // early pulls: the largest transition capacity (0: no early pulls)
  bool pulls = false;
};

// Workspaces of the teams of one build_device_plans call: as many as steps
// are built at once, each reused by the next step its team (or another)
// takes.
class WorkspacePool {
 public:
  explicit WorkspacePool(const StepMaxima& most) : most_(most) {}
  std::unique_ptr<StepWorkspace> take() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty() && !step_scratch_tuning().fresh) {
        std::unique_ptr<StepWorkspace> w = std::move(free_.back());
        free_.pop_back();
        return w;
      }
    }
    // Made at the largest step's sizes, its pages faulted in by the team
    // that takes it first (ScratchArray).
    auto w = std::make_unique<StepWorkspace>();
    const int64_t threads = std::max(most_.team_threads, loop_threads());
    int64_t counters = 0;
    for (const auto& [ne, rows] : most_.edges_rows)
      counters = std::max(counters, transpose_parts(ne, rows, threads) * rows);
    w->counters.take_raw(counters);
    if (most_.pulls) {
      w->pull.lists.src.reserve(static_cast<size_t>(most_.remote));
      w->pull.lists.dst.reserve(static_cast<size_t>(most_.remote));
      w->pull.found.take_raw(most_.remote);
      if (most_.where > 0) w->pull.clean_where(most_.where);
    }
    return w;
  }
  void give(std::unique_ptr<StepWorkspace> w) {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(w));
  }

 private:
  const StepMaxima& most_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<StepWorkspace>> free_;
};

// A step's per-edge lists, dst_row and transpose, written on the host into
// its block (every step but a derived one).
void write_topology(const DeviceStep& ds, std::byte* base, const ChunkPlan& s, const SourceRows& row, int64_t rows,
                    const EdgeKeys& k, EdgeTranspose& transpose, SegmentLists& seg) {
  const TopologyOut out{slice_data<uint32_t>(base, ds.src),      slice_data<uint32_t>(base, ds.dst_row),
                        slice_data<uint32_t>(base, ds.edge_dst), weighted(k) ? slice_data<float>(base, ds.weight) : nullptr,
                        k.orig_id.empty() ? nullptr : slice_data<int64_t>(base, ds.src_key),
                        k.orig_id.empty() ? nullptr : slice_data<int64_t>(base, ds.dst_key)};
  int64_t* t_offsets = slice_data<int64_t>(base, ds.t_offsets);
  transpose.offsets_into(t_offsets);
  pad<int64_t>(base, ds.t_offsets);
  split_long_rows({t_offsets, static_cast<size_t>(rows) + 1}, seg.t_row, seg.t_edge);
  HT_ASSERT(static_cast<int64_t>(seg.t_row.size()) == ds.t_seg_row.count);
  fill_topology(edges_of(s), row, rows, k, out);
  transpose.place([src = out.src](int64_t e) { return src[e]; }, slice_data<uint32_t>(base, ds.t_edge));
  pad<uint32_t>(base, ds.src);
  pad<float>(base, ds.weight);
  pad<uint32_t>(base, ds.dst_row);
  pad<uint32_t>(base, ds.t_edge);
  pad<uint32_t>(base, ds.edge_dst);
  pad<int64_t>(base, ds.src_key);
  pad<int64_t>(base, ds.dst_key);
}

void build_step(const Plan& plan, int gpu, int j, CommMode mode, const DevicePlan& dp, const EdgeKeys& k,
                const StepAlloc& alloc, std::mutex& alloc_mutex, StepWorkspace& ws, bool derived, DeviceStep& ds,
                StepTimes& times) {
  Timer clock;
  auto lap = [&](int part) {
    times[static_cast<size_t>(part)] += clock.seconds();
    clock.reset();
  };
  const ChunkPlan& s = plan.step(j, gpu);
  ds.plan = &s;
  const int64_t rows = dp.buffer_rows, ne = s.num_edges();
  const int64_t remote_row0 = dp.trans_capacity, remote_shift = (j & 1) ? dp.remote_shift : 0;
  // The topology is written straight into the block (no vectors copied in
  // afterwards): first what sizes the block, the transpose's row counts
  // (its long rows) and the segments. A derived step's transpose is its
  // device's: its segments get the most they can be.
  const SourceRows row(s, mode, remote_row0, remote_shift);
  HT_CHECK(static_cast<int64_t>(row.src.size()) == ne, "plan step ({}, {}) has inconsistent topology arrays", s.part,
           s.chunk);
  std::optional<EdgeTranspose> transpose;
  if (!derived) {
    transpose.emplace(ne, rows, row, ws.counters);
    if (transpose->beyond() >= 0) {
      make_topology(s, mode, rows, k, remote_row0, remote_shift);  // throws its error (also for bad self-loops first)
      HT_CHECK(false, "plan step ({}, {}): edge {} reads a row beyond the buffer", s.part, s.chunk, transpose->beyond());
    }
  }
  SegmentLists& seg = ws.seg;
  split_long_rows(s.offsets, seg.row, seg.edge);
  const int64_t t_segments = derived ? most_long_row_segments(ne) : transpose->long_row_segments();
  lap(0);
  const StepIndexLists x = index_lists(s, mode);
  lap(1);
  if (mode != CommMode::baseline) ds.peers = peer_ranges(s);
  PullLists& early = ws.pull.lists;
  early.clear();
  if (dp.areas == RemoteAreas::early_pulls && j > 0) early_pull_lists(plan, j, s, mode, ds.peers, ws.pull);
  if (dp.areas == RemoteAreas::kept_rows && j > 0)
    kept_remote_lists(plan, j, gpu, dp, ds.peers, ds.kept_remote, ws.pull);
  lap(2);
  Packer pk;
  const TopologySizes sizes{s.num_dst(), ne, rows, weighted(k), !k.orig_id.empty(),
                            static_cast<int64_t>(seg.row.size()), t_segments};
  const int64_t host_part = lay_out(ds, pk, sizes, x, mode == CommMode::baseline ? 0 : s.remote_slot.size(), early);
  ds.derived = derived;
  ds.block_bytes = pk.bytes();
  const int64_t packed = derived ? host_part : ds.block_bytes;  // what the host writes
  std::byte* base = nullptr;
  {
    const std::lock_guard<std::mutex> one_at_a_time(alloc_mutex);
    base = alloc(gpu, packed);
  }
  lap(3);
  std::memset(base, 0, static_cast<size_t>(std::min<int64_t>(packed, 256)));  // a block of empty slices
  if (derived) {
    // src goes to the device from the plan's own list (its pages here never
    // touched): the device shifts the second remote area's rows and checks
    // the rows against the buffer (DeriveTopology).
    ds.plan_src = row.src;
    ds.shift_from = row.shift_from;
    ds.shift = row.shift;
  } else {
    write_topology(ds, base, s, row, rows, k, *transpose, seg);
  }
  lap(0);
  pack_lists(ds, base, s, mode, seg, early);
  lap(4);
  ds.bytes = {base, static_cast<size_t>(packed)};
  ds.flush_vids_host = x.flush_vids_host;
  ds.reused_rows = x.reused;
  ds.segments = static_cast<int64_t>(std::max(seg.row.size(), derived ? size_t{0} : seg.t_row.size()));
  if (mode != CommMode::baseline)
    ds.load_by_producer = load_pieces({slice_data<uint32_t>(base, ds.load_vids), static_cast<size_t>(x.loads)}, plan, gpu);
  lap(5);
}

// body(q) for the steps q in [0, tasks), side by side, the threads shared
// out: with as many steps as threads or more, one thread each (their loops
// run serially); with fewer, each step gets threads / tasks of its own for
// its loops, so that no core idles while, say, the four steps of m = 1,
// n = 4 are built on 16 cores. (Measured there, session 9: the steps one
// after another, each by all threads, took 3.8-5.1 s against 2.1 s side by
// side, one thread each.) The bytes do not depend on it. The steps' teams
// are std::threads (run_in_teams), not a nested OpenMP team: libgomp starts
// fresh threads for every region nested in a team, and a step opens a dozen.
// The most threads run_steps gives one step's loops.
int64_t step_threads(int64_t tasks) {
  const int64_t threads = loop_threads();
  if (tasks <= 1) return threads;
  return tasks >= threads ? 1 : (threads + tasks - 1) / tasks;
}

template <typename Body>
void run_steps(int64_t tasks, Body body) {
  const int64_t threads = loop_threads();
  if (tasks <= 1 || tasks >= threads) return parallel_tasks(tasks, body);
  run_in_teams(tasks, static_cast<int>(tasks), static_cast<int>(threads), body);
}

}  // namespace

std::vector<DevicePlan> build_device_plans(const Plan& plan, int first_gpu, int count, CommMode mode,
                                           const EdgeKeys& keys, bool need_edge_keys, const StepAlloc& alloc,
                                           RemoteAreas areas, const std::vector<uint8_t>& derived) {
  HT_ASSERT(derived.empty() || static_cast<int>(derived.size()) == count);
  std::vector<DevicePlan> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    DevicePlan& dp = out[static_cast<size_t>(i)];
    const int gpu = first_gpu + i;
    dp.trans_capacity = plan.trans_capacity[gpu];
    if (areas != RemoteAreas::one && mode != CommMode::baseline) {
      dp.areas = areas;
      dp.remote_shift = plan.remote_capacity[gpu];
    }
    dp.buffer_rows = mode == CommMode::baseline ? plan.nbr_capacity[gpu] : plan.merged_capacity(gpu) + dp.remote_shift;
    dp.steps.resize(plan.n);
  }
  EdgeKeys k = keys;
  if (!need_edge_keys) k.orig_id = {};
  // Steps are independent, every device's alike: all of them across the
  // threads (setup time scales with the edges; at m = 4 a device's steps
  // alone left most cores idle), each with its share (run_steps). A single
  // step is built by all threads (make_topology; measured on 16 cores,
  // bench/RESULTS.md, session 9: 5.80 -> 4.74 s at 2.45 M vertices).
  const int64_t tasks = static_cast<int64_t>(count) * plan.n;
  std::vector<StepTimes> times(static_cast<size_t>(tasks), StepTimes{});
  std::mutex alloc_mutex;  // (the teams are std::threads and OpenMP threads)
  StepMaxima most;
  most.team_threads = step_threads(tasks);
  for (int i = 0; i < count; ++i) {
    const DevicePlan& dp = out[static_cast<size_t>(i)];
    const int gpu = first_gpu + i;
    for (int j = 0; j < plan.n; ++j) {
      const ChunkPlan& s = plan.step(j, gpu);
      most.edges_rows.emplace_back(s.num_edges(), dp.buffer_rows);
      if (dp.areas != RemoteAreas::one && j > 0) {
        most.pulls = true;
        most.remote = std::max(most.remote, static_cast<int64_t>(s.remote_slot.size()));
      }
    }
    if (dp.areas == RemoteAreas::early_pulls)
      for (const uint32_t c : plan.trans_capacity) most.where = std::max<int64_t>(most.where, c);
  }
  WorkspacePool pool(most);
  // The process's CPU times and page faults: the steps' log says how much of
  // their time the kernel took (page faults, zeroing, munmap shootdowns), the
  // vertex store's threads beside them included.
  const CpuSeconds before = process_cpu_seconds();
  Timer wall;
  run_steps(tasks, [&](int64_t task) {
    const int64_t q = step_scratch_tuning().reverse ? tasks - 1 - task : task;
    const int i = static_cast<int>(q / plan.n), j = static_cast<int>(q % plan.n);
    DevicePlan& dp = out[static_cast<size_t>(i)];
    std::unique_ptr<StepWorkspace> ws = pool.take();
    const bool derives = !derived.empty() && derived[static_cast<size_t>(i)] != 0;
    build_step(plan, first_gpu + i, j, mode, dp, k, alloc, alloc_mutex, *ws, derives, dp.steps[j],
               times[static_cast<size_t>(q)]);
    pool.give(std::move(ws));
  });
  const double wall_s = wall.seconds();
  const CpuSeconds after = process_cpu_seconds();
  StepTimes sum{}, slowest{};
  for (const StepTimes& t : times)
    for (size_t p = 0; p < sum.size(); ++p) {
      sum[p] += t[p];
      slowest[p] = std::max(slowest[p], t[p]);
    }
  const std::string parts = fmt::format(
      "device plan steps, summed over {} steps (slowest step): topology {:.2f} s ({:.2f}), index lists {:.2f} "
      "s ({:.2f}), pull lists {:.2f} s ({:.2f}), blocks {:.2f} s ({:.2f}), packing {:.2f} s ({:.2f}), load "
      "pieces {:.2f} s ({:.2f}); in {:.2f} s, the process's CPU time meanwhile (threads beside the steps "
      "included): system {:.2f} s, user {:.2f} s, {} minor and {} major page faults",
      times.size(), sum[0], slowest[0], sum[1], slowest[1], sum[2], slowest[2], sum[3], slowest[3], sum[4],
      slowest[4], sum[5], slowest[5], wall_s, after.system - before.system, after.user - before.user,
      after.minor_faults - before.minor_faults, after.major_faults - before.major_faults);
  // Said by default when a step takes seconds (large graphs: where setup's
  // "steps" goes, blocks being the pinned allocations beside the store's).
  if (std::accumulate(slowest.begin(), slowest.end(), 0.0) >= 1.0) log::info("{}", parts);
  else log::debug("{}", parts);
  for (DevicePlan& dp : out)
    for (int j = 0; j < plan.n; ++j) {
      const DeviceStep& ds = dp.steps[j];
      dp.max_step_bytes = std::max(dp.max_step_bytes, ds.block_bytes);
      if (j > 0) dp.max_later_loads = std::max(dp.max_later_loads, ds.load_count());
      dp.max_flush = std::max(dp.max_flush, ds.flush_count());
      dp.max_segments = std::max(dp.max_segments, ds.segments);
    }
  return out;
}

DeriveTopology derivation_of(const DeviceStep& ds, DevArray<std::byte> at) {
  HT_ASSERT(ds.derived && ds.plan != nullptr);
  return {ds.bind(at).topo, ds.plan->src_vid, ds.plan->dst_begin, ds.shift_from, ds.shift, ds.plan->part, ds.plan->chunk};
}

std::vector<ByteUpload> packed_copies(const DeviceStep& ds, DevArray<std::byte> at) {
  if (!ds.derived) return {{ds.bytes, at}};
  // The packed part but src (never written on the host), and src from the plan.
  const size_t src_at = static_cast<size_t>(ds.src.offset), after = static_cast<size_t>(ds.seg_row.offset);
  return {{ds.bytes.first(src_at), at},
          {std::as_bytes(ds.plan_src), {at.data + src_at, static_cast<int64_t>(ds.plan_src.size_bytes())}},
          {ds.bytes.subspan(after), {at.data + after, static_cast<int64_t>(ds.bytes.size() - after)}}};
}

std::vector<std::byte> host_block_of(const DeviceStep& ds, std::byte fill) {
  std::vector<std::byte> block(static_cast<size_t>(ds.block_bytes), fill);
  for (const ByteUpload& u : packed_copies(ds, {block.data(), ds.block_bytes}))
    std::copy(u.src.begin(), u.src.end(), u.dst.data);
  return block;
}

int64_t derive_topology_on_host(const DeriveTopology& d, const EdgeKeys& v) {
  const DevTopology& t = d.topo;
  HT_CHECK(static_cast<int64_t>(d.src_vid.size()) == t.num_edges, "plan step ({}, {}): {} source vertices for {} edges",
           d.part, d.chunk, d.src_vid.size(), t.num_edges);
  const EdgeKeys keys = v.for_step(t.weight.size > 0, t.edge_src_key.size > 0);
  HT_CHECK(t.weight.size == 0 || !keys.inv_sqrt_deg.empty() || !keys.inv_deg.empty(),
           "a weighted step derived without vertex weights");
  const TopologyOut out{t.src.data, t.dst_row.data, t.edge_dst.data, t.weight.size > 0 ? t.weight.data : nullptr,
                        keys.orig_id.empty() ? nullptr : t.edge_src_key.data,
                        keys.orig_id.empty() ? nullptr : t.edge_dst_key.data};
  uint32_t* src = t.src.data;
  if (d.shift_from != UINT32_MAX) {  // the second remote area's rows (SourceRows)
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < t.num_edges; ++e)
      if (src[e] >= d.shift_from) src[e] += d.shift;
  }
  auto row = [src](int64_t e) { return src[e]; };  // (fill_topology checks them against the buffer)
  fill_topology(StepEdges{t.num_dst, t.num_edges, d.dst_begin, t.offsets.data, d.src_vid.data(), d.part, d.chunk}, row,
                t.num_src_rows, keys, out);
  ScratchArray<uint32_t> counters;
  EdgeTranspose transpose(t.num_edges, t.num_src_rows, row, counters);
  HT_ASSERT(transpose.beyond() < 0);  // (fill_topology checked the rows)
  transpose.offsets_into(t.t_offsets.data);
  transpose.place(row, t.t_edge.data);
  std::vector<uint32_t> seg_row;
  std::vector<int64_t> seg_edge;
  split_long_rows({t.t_offsets.data, static_cast<size_t>(t.num_src_rows) + 1}, seg_row, seg_edge);
  HT_CHECK(static_cast<int64_t>(seg_row.size()) <= t.t_seg_row.size, "plan step ({}, {}): {} transpose segments, room for {}",
           d.part, d.chunk, seg_row.size(), t.t_seg_row.size);
  std::copy(seg_row.begin(), seg_row.end(), t.t_seg_row.data);
  std::copy(seg_edge.begin(), seg_edge.end(), t.t_seg_edge.data);
  return static_cast<int64_t>(seg_row.size());
}

DevicePlan build_device_plan(const Plan& plan, int gpu, CommMode mode, const EdgeKeys& keys, bool need_edge_keys,
                             const StepAlloc& alloc, RemoteAreas areas) {
  return std::move(build_device_plans(plan, gpu, 1, mode, keys, need_edge_keys, alloc, areas)[0]);
}

namespace {

// The returns after a step's first returns are staged and added by the host
// into rows scattered over the store: in ascending vertex order, so that a
// piece's adds walk the store forwards (pages and cache lines in order,
// prefetched) instead of at random. A vertex is returned at most once per
// step, so the order of the adds into any one row does not change.
void sort_staged_returns(DeviceStep& s) {
  auto* rows = reinterpret_cast<uint32_t*>(s.bytes.data() + s.flush_rows.offset);
  auto* vids = reinterpret_cast<uint32_t*>(s.bytes.data() + s.flush_vids.offset);
  const int64_t n = s.flush_rows.count - s.first_count;
  // (vertex, buffer row) as one key, vertex high: radix sorted below (a
  // step's std::sort of the pairs was the critical path of "first returns",
  // about 1 s at 1.2 B edges, issue 33).
  std::vector<uint64_t> staged(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) staged[k] = uint64_t{vids[s.first_count + k]} << 32 | rows[s.first_count + k];
  radix_sort(staged, 4096);
  s.staged_vids.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const auto v = static_cast<uint32_t>(staged[k] >> 32);
    HT_CHECK(k == 0 || v != static_cast<uint32_t>(staged[k - 1] >> 32), "a step returns vertex {} twice", v);
    vids[s.first_count + k] = s.staged_vids[k] = v;
    rows[s.first_count + k] = static_cast<uint32_t>(staged[k]);
  }
}

// A step's flush list reordered: its first returns (f[k] = 1) first, then
// the rest, each part in its order (stable).
void first_returns_first(DeviceStep& s, const std::vector<uint8_t>& f) {
  if (std::find(f.begin(), f.end(), uint8_t{0}) == f.end()) {  // all first (one step): the order stays
    s.first_count = static_cast<int64_t>(f.size());
    return;
  }
  auto* rows = reinterpret_cast<uint32_t*>(s.bytes.data() + s.flush_rows.offset);
  auto* vids = reinterpret_cast<uint32_t*>(s.bytes.data() + s.flush_vids.offset);
  std::vector<uint32_t> r, v;
  r.reserve(f.size());
  v.reserve(f.size());
  for (int pass = 1; pass >= 0; --pass)
    for (size_t k = 0; k < f.size(); ++k)
      if (f[k] == pass) {
        r.push_back(rows[k]);
        v.push_back(vids[k]);
      }
  std::copy(r.begin(), r.end(), rows);
  std::copy(v.begin(), v.end(), vids);
  s.first_count = std::count(f.begin(), f.end(), uint8_t{1});
}

// Raises `slot` to `key` unless it holds a larger one.
void atomic_max(uint32_t& slot, uint32_t key) {
  std::atomic_ref<uint32_t> a(slot);
  uint32_t cur = a.load(std::memory_order_relaxed);
  while (key > cur && !a.compare_exchange_weak(cur, key, std::memory_order_relaxed)) {
  }
}

}  // namespace

namespace {

// first[p][j][k] for every step of several (see mark_first_flushes); returns
// how many flushes are first returns.
int64_t first_returns_of_steps(const std::vector<DevicePlan*>& plans, int64_t num_vertices,
                               std::vector<std::vector<std::vector<uint8_t>>>& first) {
  const size_t P = plans.size();
  const size_t n = plans[0]->steps.size();
  const auto Q = static_cast<uint32_t>(P * n);
  std::vector<uint32_t> key;
  resize_for_overwrite(key, static_cast<size_t>(num_vertices));
  for (size_t q = 0; q < Q; ++q) {
    const std::span<const vid_t> vids = plans[q % P]->steps[q / P].flush_vids_host;
    const auto mine = static_cast<uint32_t>(Q - q);
    parallel_blocks(static_cast<int64_t>(vids.size()), [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) atomic_max(key[vids[static_cast<size_t>(k)]], mine);
    });
  }
  int64_t covered = 0;
  for (size_t q = 0; q < Q; ++q) {
    const std::span<const vid_t> vids = plans[q % P]->steps[q / P].flush_vids_host;
    std::vector<uint8_t>& f = first[q % P][q / P];
    f.resize(vids.size());
    const auto mine = static_cast<uint32_t>(Q - q);
    const int64_t size = static_cast<int64_t>(vids.size());
    int64_t firsts = 0;
#pragma omp parallel for reduction(+ : firsts) if (size >= static_cast<int64_t>(bulk_tuning().grain))
    for (int64_t k = 0; k < size; ++k) {
      const uint8_t is_first = key[vids[static_cast<size_t>(k)]] == mine ? 1 : 0;
      f[static_cast<size_t>(k)] = is_first;
      firsts += is_first;
    }
    covered += firsts;
  }
  return covered;
}

}  // namespace

bool mark_first_flushes(std::vector<DevicePlan*> plans, int64_t num_vertices, int64_t held_begin, int64_t held_end) {
  // first[p][j][k]: flush k of plan p's step j is its row's first return, in
  // the order returns are applied (batch by batch, devices in order): step
  // q = j * P + p. A vertex is returned at most once per step, so its first
  // return is its smallest q: found over blocks of every list by all threads
  // (a serial walk over every flush took 1.0-1.4 s of setup at 1.2 B edges,
  // issue 33), as key[v] = max over its steps of Q - q (0: never returned).
  const size_t P = plans.size();
  const size_t n = plans.empty() ? 0 : plans[0]->steps.size();
  const auto Q = static_cast<uint32_t>(P * n);
  // The first flush outside this process's rows, in the serial order.
  for (size_t q = 0; q < Q; ++q) {
    const DeviceStep& s = plans[q % P]->steps[q / P];
    const int64_t size = static_cast<int64_t>(s.flush_vids_host.size());
    int64_t bad = size;
#pragma omp parallel for reduction(min : bad) if (size >= static_cast<int64_t>(bulk_tuning().grain))
    for (int64_t k = 0; k < size; ++k) {
      const vid_t v = s.flush_vids_host[static_cast<size_t>(k)];
      if (v < held_begin || v >= held_end) bad = std::min(bad, k);
    }
    HT_CHECK(bad == size, "batch {} returns vertex {}, outside this process's rows [{}, {})", q / P,
             s.flush_vids_host[static_cast<size_t>(std::min(bad, size - 1))], held_begin, held_end);
  }
  std::vector<std::vector<std::vector<uint8_t>>> first(P);
  for (auto& f : first) f.resize(n);
  int64_t covered = 0;
  if (Q == 1) {  // one step (m = n = 1): its flushes are distinct, each its row's first return
    const std::span<const vid_t> vids = plans[0]->steps[0].flush_vids_host;
    first[0][0].assign(vids.size(), 1);
    covered = static_cast<int64_t>(vids.size());
  } else if (Q > 1) {
    covered = first_returns_of_steps(plans, num_vertices, first);
  }
  const bool every_row = covered == held_end - held_begin;
  // Each step on its own from here (its lists reordered, its staged returns
  // sorted): in parallel, as build_device_plan builds them.
  parallel_tasks(static_cast<int64_t>(plans.size() * n), [&](int64_t pj) {
    const size_t p = static_cast<size_t>(pj) / n, j = static_cast<size_t>(pj) % n;
    DeviceStep& s = plans[p]->steps[j];
    if (every_row) first_returns_first(s, first[p][j]);
    else s.first_count = 0;
    sort_staged_returns(s);
  });
  return every_row;
}

void mark_handoff(std::vector<DevicePlan*> plans, int64_t num_vertices) {
  if (plans.empty() || plans[0]->steps.empty()) return;
  const size_t n = plans[0]->steps.size();
  // returns[v]: bit 0 once v is returned, bit 1 once it is returned again
  // (1 = exactly once); over blocks of every list by all threads (a serial
  // walk over every flush, then device after device, took 0.6-1.2 s of
  // setup at 1.2-2.5 B edges, issue 33).
  std::vector<uint8_t> returns;
  resize_for_overwrite(returns, static_cast<size_t>(num_vertices));
  for (DevicePlan* dp : plans)
    for (const DeviceStep& s : dp->steps) {
      const std::span<const vid_t> vids = s.flush_vids_host;
      parallel_blocks(static_cast<int64_t>(vids.size()), [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          std::atomic_ref<uint8_t> r(returns[vids[static_cast<size_t>(k)]]);
          if (r.fetch_or(1, std::memory_order_relaxed) & 1) r.fetch_or(2, std::memory_order_relaxed);
        }
      });
    }
  // Each device's last step and handoff lists on their own (they read
  // `returns` only).
  parallel_tasks(static_cast<int64_t>(plans.size()), [&](int64_t p) {
    DevicePlan* dp = plans[static_cast<size_t>(p)];
    DeviceStep& last = dp->steps[n - 1];
    auto* rows = reinterpret_cast<uint32_t*>(last.bytes.data() + last.flush_rows.offset);
    auto* vids = reinterpret_cast<uint32_t*>(last.bytes.data() + last.flush_vids.offset);
    // Own vertices of this device: its batches' destination ranges.
    auto batch_of = [&](uint32_t v) -> int64_t {
      for (size_t j = 0; j < n; ++j) {
        const ChunkPlan& c = *dp->steps[j].plan;
        if (v >= c.dst_begin && v < c.dst_begin + c.num_dst()) return static_cast<int64_t>(j);
      }
      return -1;
    };
    dp->handoff.assign(n, {});
    std::vector<uint32_t> r, v;
    std::vector<uint32_t> hr, hv;
    for (int64_t k = 0; k < last.first_count; ++k) {
      const int64_t j = returns[vids[k]] == 1 ? batch_of(vids[k]) : -1;
      if (j < 0) {
        r.push_back(rows[k]);
        v.push_back(vids[k]);
        continue;
      }
      hr.push_back(rows[k]);
      hv.push_back(vids[k]);
      HandoffRows& h = dp->handoff[static_cast<size_t>(j)];
      h.rows.push_back(static_cast<uint32_t>(vids[k] - dp->steps[static_cast<size_t>(j)].plan->dst_begin));
      h.slots.push_back(rows[k]);
    }
    r.insert(r.end(), hr.begin(), hr.end());
    v.insert(v.end(), hv.begin(), hv.end());
    std::copy(r.begin(), r.end(), rows);
    std::copy(v.begin(), v.end(), vids);
    last.handoff_count = static_cast<int64_t>(hr.size());
    for (size_t j = 0; j < n; ++j) {
      HandoffRows& h = dp->handoff[j];
      const ChunkPlan& c = *dp->steps[j].plan;
      std::vector<uint8_t> handed(static_cast<size_t>(c.num_dst()), 0);
      for (uint32_t r : h.rows) handed[r] = 1;
      for (int64_t r = 0; r < c.num_dst(); ++r) {
        if (handed[static_cast<size_t>(r)]) continue;
        h.host_rows.push_back(static_cast<uint32_t>(r));
        h.host_vids.push_back(static_cast<uint32_t>(c.dst_begin + r));
      }
    }
  });
}

int64_t flush_count(const ChunkPlan& s, CommMode mode) {
  switch (mode) {
    case CommMode::baseline: return static_cast<int64_t>(s.nbr.size());
    case CommMode::p2p: return static_cast<int64_t>(s.trans_vid.size());
    case CommMode::full: break;
  }
  return static_cast<int64_t>(s.flush_slot.size());
}

}  // namespace ht
