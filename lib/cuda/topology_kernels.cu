// A resident step's topology derived on its GPU (Device::derive_topologies):
// the same bytes device_plan.cpp's make_topology writes on the host, from the
// offsets and src the host uploaded and each edge's source vertex.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels.cuh"

namespace ht::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, int64_t{1} << 20));
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

// edge_dst[e]: the destination whose offsets range holds e (the last d with
// offsets[d] <= e: empty rows skipped).
__global__ void edge_destinations(const int64_t* offsets, int64_t nd, int64_t ne, uint32_t* edge_dst) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < ne; e += int64_t{gridDim.x} * blockDim.x) {
    int64_t lo = 0, hi = nd;  // offsets[lo] <= e < offsets[hi]
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (offsets[mid] <= e) lo = mid;
      else hi = mid;
    }
    edge_dst[e] = static_cast<uint32_t>(lo);
  }
}

// Per edge: its weight and keys, its destination's self-loop (the last one:
// dst_row holds 1 + the largest self-loop edge until resolve_self_loops),
// and its source row counted into t_offsets[row + 1].
__global__ void edge_values(TopologyDerivation a) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < a.ne; e += int64_t{gridDim.x} * blockDim.x) {
    const uint32_t d = a.edge_dst[e];
    const int64_t v = a.dst_begin + d;
    const uint32_t u = a.src_vid[e];
    if (u == v) atomicMax(a.dst_row + d, static_cast<uint32_t>(e + 1));
    if (a.inv_deg != nullptr) a.weight[e] = u == v ? 0.0f : a.inv_deg[v];  // SAGE's mean: the self-loop is no neighbor
    else if (a.inv_sqrt_deg != nullptr) a.weight[e] = a.inv_sqrt_deg[u] * a.inv_sqrt_deg[v];
    if (a.src_key != nullptr) {
      a.src_key[e] = a.orig_id[u];
      a.dst_key[e] = a.orig_id[v];
    }
    if (a.src[e] < a.rows) atomicAdd(reinterpret_cast<unsigned long long*>(a.t_offsets + a.src[e] + 1), 1ull);
  }
}

// dst_row[d] = the self-loop's source row; a destination without one is
// marked UINT32_MAX and the smallest such d kept in *bad.
__global__ void resolve_self_loops(const uint32_t* src, int64_t nd, uint32_t* dst_row, unsigned long long* bad) {
  for (int64_t d = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; d < nd; d += int64_t{gridDim.x} * blockDim.x) {
    const uint32_t e1 = dst_row[d];
    if (e1 == 0) {
      dst_row[d] = UINT32_MAX;
      atomicMin(bad, static_cast<unsigned long long>(d));
    } else {
      dst_row[d] = src[e1 - 1];
    }
  }
}

// results (derive_topology): no destination without a self-loop, no
// segments, no edge beyond the buffer, so far.
__global__ void start_results(int64_t* results) {
  results[0] = INT64_MAX;
  results[1] = 0;
  results[2] = INT64_MAX;
}

// The plan's src shifted where it reads the second remote area, and each
// row checked against the buffer (the first edge beyond it into *beyond).
__global__ void shift_rows(uint32_t* src, int64_t ne, uint32_t shift_from, uint32_t shift, int64_t rows,
                           unsigned long long* beyond) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < ne; e += int64_t{gridDim.x} * blockDim.x) {
    uint32_t r = src[e];
    if (r >= shift_from) src[e] = r += shift;
    if (r >= rows) atomicMin(beyond, static_cast<unsigned long long>(e));
  }
}

__global__ void iota(uint32_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<uint32_t>(i);
}

// Segments per source row (split_long_rows): ceil(c / kLongRowEdges) for a
// row of c > kLongRowEdges edges, else none.
__global__ void row_pieces(const int64_t* t_offsets, int64_t rows, int64_t* pieces) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows; r += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = t_offsets[r + 1] - t_offsets[r];
    pieces[r] = c > kLongRowEdges ? (c + kLongRowEdges - 1) / kLongRowEdges : 0;
  }
}

// The long rows' segments at their places (`first`: the exclusive scan of
// the pieces), as split_long_rows lists them; the count into *count.
__global__ void write_segments(const int64_t* t_offsets, int64_t rows, const int64_t* pieces, const int64_t* first,
                               int64_t capacity, uint32_t* seg_row, int64_t* seg_edge, int64_t* count) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows; r += int64_t{gridDim.x} * blockDim.x) {
    if (r == rows - 1) *count = first[r] + pieces[r];
    const int64_t p = pieces[r];
    if (p == 0) continue;
    const int64_t b = t_offsets[r], edges = t_offsets[r + 1] - b;
    for (int64_t k = 0; k < p && first[r] + k < capacity; ++k) {
      seg_row[first[r] + k] = static_cast<uint32_t>(r);
      seg_edge[first[r] + k] = b + edges * k / p;
    }
  }
}

int end_bit(int64_t rows) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) < rows) ++bits;
  return bits;
}

// The working memory's parts: the sort's key copy and the two alternate
// buffers, the pieces and their scan, cub's own.
struct TempLayout {
  size_t keys = 0, keys_alt = 0, values_alt = 0, pieces = 0, first = 0, cub = 0, cub_bytes = 0, total = 0;
};

TempLayout temp_layout(int64_t ne, int64_t rows) {
  size_t sort_bytes = 0, scan_bytes = 0, exclusive_bytes = 0;
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr), values(nullptr, nullptr);
  HT_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys, values, ne, 0, end_bit(rows)));
  HT_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, static_cast<int64_t*>(nullptr), rows));
  HT_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, exclusive_bytes, static_cast<const int64_t*>(nullptr),
                                            static_cast<int64_t*>(nullptr), rows));
  TempLayout t;
  const size_t edges = aligned(static_cast<size_t>(ne) * 4), per_row = aligned(static_cast<size_t>(rows) * 8);
  t.keys = 0;
  t.keys_alt = t.keys + edges;
  t.values_alt = t.keys_alt + edges;
  t.pieces = t.values_alt + edges;
  t.first = t.pieces + per_row;
  t.cub = t.first + per_row;
  t.cub_bytes = std::max({sort_bytes, scan_bytes, exclusive_bytes, size_t{1}});
  t.total = t.cub + aligned(t.cub_bytes);
  return t;
}

}  // namespace

size_t derive_topology_temp_bytes(int64_t ne, int64_t rows) { return temp_layout(ne, rows).total; }

void derive_topology(const TopologyDerivation& a, void* temp, int64_t* results, cudaStream_t s) {
  const TempLayout l = temp_layout(a.ne, a.rows);
  auto* base = static_cast<char*>(temp);
  auto* keys = reinterpret_cast<uint32_t*>(base + l.keys);
  auto* keys_alt = reinterpret_cast<uint32_t*>(base + l.keys_alt);
  auto* values_alt = reinterpret_cast<uint32_t*>(base + l.values_alt);
  auto* pieces = reinterpret_cast<int64_t*>(base + l.pieces);
  auto* first = reinterpret_cast<int64_t*>(base + l.first);
  void* cub_temp = base + l.cub;
  start_results<<<1, 1, 0, s>>>(results);
  shift_rows<<<blocks_for(a.ne), kThreads, 0, s>>>(a.src, a.ne, a.shift_from, a.shift, a.rows,
                                                   reinterpret_cast<unsigned long long*>(results + 2));
  HT_CUDA_TRY(cudaGetLastError());
  HT_CUDA_TRY(cudaMemsetAsync(a.dst_row, 0, static_cast<size_t>(a.nd) * 4, s));
  HT_CUDA_TRY(cudaMemsetAsync(a.t_offsets, 0, static_cast<size_t>(a.rows + 1) * 8, s));
  edge_destinations<<<blocks_for(a.ne), kThreads, 0, s>>>(a.offsets, a.nd, a.ne, a.edge_dst);
  HT_CUDA_TRY(cudaGetLastError());
  edge_values<<<blocks_for(a.ne), kThreads, 0, s>>>(a);
  HT_CUDA_TRY(cudaGetLastError());
  resolve_self_loops<<<blocks_for(a.nd), kThreads, 0, s>>>(a.src, a.nd, a.dst_row,
                                                           reinterpret_cast<unsigned long long*>(results));
  HT_CUDA_TRY(cudaGetLastError());
  size_t cub_bytes = l.cub_bytes;
  if (a.rows > 0) HT_CUDA_TRY(cub::DeviceScan::InclusiveSum(cub_temp, cub_bytes, a.t_offsets + 1, a.rows, s));
  // The transpose: edge ids by source row, each row's ascending (a stable
  // sort of the ids by src: the host's counting placement's order).
  if (a.ne > 0) {
    HT_CUDA_TRY(cudaMemcpyAsync(keys, a.src, static_cast<size_t>(a.ne) * 4, cudaMemcpyDeviceToDevice, s));
    iota<<<blocks_for(a.ne), kThreads, 0, s>>>(a.t_edge, a.ne);
    HT_CUDA_TRY(cudaGetLastError());
    cub::DoubleBuffer<uint32_t> k(keys, keys_alt), v(a.t_edge, values_alt);
    cub_bytes = l.cub_bytes;
    HT_CUDA_TRY(cub::DeviceRadixSort::SortPairs(cub_temp, cub_bytes, k, v, a.ne, 0, end_bit(a.rows), s));
    if (v.Current() != a.t_edge)
      HT_CUDA_TRY(cudaMemcpyAsync(a.t_edge, v.Current(), static_cast<size_t>(a.ne) * 4, cudaMemcpyDeviceToDevice, s));
  }
  if (a.rows > 0) {
    row_pieces<<<blocks_for(a.rows), kThreads, 0, s>>>(a.t_offsets, a.rows, pieces);
    HT_CUDA_TRY(cudaGetLastError());
    cub_bytes = l.cub_bytes;
    HT_CUDA_TRY(cub::DeviceScan::ExclusiveSum(cub_temp, cub_bytes, static_cast<const int64_t*>(pieces), first, a.rows, s));
    write_segments<<<blocks_for(a.rows), kThreads, 0, s>>>(a.t_offsets, a.rows, pieces, first, a.seg_capacity,
                                                           a.t_seg_row, a.t_seg_edge, results + 1);
    HT_CUDA_TRY(cudaGetLastError());
  }
}

}  // namespace ht::cuda
