#pragma once
// Kernel launchers of the CUDA executor. Every launcher enqueues on `s` and
// checks the launch; sizes are validated by the caller (CudaDevice).
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/executor.hpp"

namespace ht::cuda {

// ---- communication (comm_kernels.cu)
// dst[dst_rows[k]] = drop(widen(src[src_rows[k]])); src (of dtype t) may be
// mapped host memory; a null index list stands for 0, 1, 2, ... (contiguous rows).
void gather_rows(const void* src, StoreDtype t, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n,
                 int64_t cols, float* dst, const DropoutSpec& drop, cudaStream_t s);
// dst[i] = round_to_t(src[i]) for i < count; t is bf16 or fp16, dst may be
// mapped host memory (contiguous rows written by the device).
void store_rows16(const float* src, int64_t count, void* dst, StoreDtype t, cudaStream_t s);
// dst[i] = widen(src[i]) for i < count (src of dtype t in device memory).
void widen_rows16(const void* src, StoreDtype t, int64_t count, float* dst, cudaStream_t s);
// dst[dst_row0 + k] = src[rows[k]]; src may be a peer device's memory.
void pull_rows(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst, cudaStream_t s);
// dst[dst_rows[k]] = src[rows[k]]: a pull into scattered rows.
void pull_rows_scattered(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst,
                         const uint32_t* dst_rows, cudaStream_t s);
// dst[rows[k]] += src[k] with system-scope atomics (dst may be a peer's memory).
void push_add_rows(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst, cudaStream_t s);
// dst[dst_rows[k]] += src[src_rows[k]]; src[src_rows[k]] = 0 (a gradient
// matrix in device memory: in-memory mode, the GPU cache, its row tier; dst
// rows are distinct). A 16-bit dst adds as the host does (Device::add_rows_and_zero).
void add_rows_and_zero(float* src, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n, int64_t cols,
                       void* dst, StoreDtype t, cudaStream_t s);
// dst[dst_rows[k]] = src[src_rows[k]]; src[src_rows[k]] = 0 (dst may be
// mapped host memory: writes only, no read-modify-write over the link).
void scatter_rows_and_zero(float* src, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n, int64_t cols,
                           void* dst, StoreDtype t, cudaStream_t s);
// staging[k] = src[rows[k]]; src[rows[k]] = 0.
void compact_and_zero(float* src, const uint32_t* rows, int64_t n, int64_t cols, float* staging, cudaStream_t s);

// ---- a resident step's topology derived on the GPU (topology_kernels.cu)
// Device pointers: offsets and src as the host packed them; src_vid uploaded;
// the rest written (Device::derive_topologies). A null weight, inv_deg or
// key pointer: not asked for.
struct TopologyDerivation {
  int64_t nd = 0, ne = 0, rows = 0, dst_begin = 0, seg_capacity = 0;
  uint32_t shift_from = UINT32_MAX, shift = 0;  // src as the plan lists it (DeriveTopology)
  const int64_t* offsets = nullptr;
  uint32_t* src = nullptr;
  const uint32_t* src_vid = nullptr;
  const float *inv_sqrt_deg = nullptr, *inv_deg = nullptr;
  const int64_t* orig_id = nullptr;
  uint32_t *edge_dst = nullptr, *dst_row = nullptr, *t_edge = nullptr, *t_seg_row = nullptr;
  float* weight = nullptr;
  int64_t *src_key = nullptr, *dst_key = nullptr, *t_offsets = nullptr, *t_seg_edge = nullptr;
};
// Bytes of working memory derive_topology needs for a step of `ne` edges over `rows` source rows.
size_t derive_topology_temp_bytes(int64_t ne, int64_t rows);
// Queues the derivation on `s`; results (device, kDeriveResults values) get
// the first destination without a self-loop (INT64_MAX: none), the
// transpose's segments and the first edge whose row is beyond the buffer
// (INT64_MAX: none; then the rest is not derived).
inline constexpr int kDeriveResults = 3;
void derive_topology(const TopologyDerivation& a, void* temp, int64_t* results, cudaStream_t s);

// ---- dense and sparse (dense_kernels.cu)
// The rows of a topology in one direction: forward (a row per destination,
// its edges offsets[r]..offsets[r + 1], neighbor nbr_of[e]) or transposed (a
// row per source row, edge k is edge_of[k]); long rows' segments (DevTopology::seg_row).
struct SparseRows {
  int64_t count = 0;
  const int64_t* offsets = nullptr;
  const uint32_t* edge_of = nullptr;  // transposed only
  const uint32_t* nbr_of = nullptr;
  DevIdx seg_row;
  const int64_t* seg_edge = nullptr;
};
inline SparseRows forward_rows(const DevTopology& t) {
  return {t.num_dst, t.offsets.data, nullptr, t.src.data, t.seg_row, t.seg_edge.data};
}
inline SparseRows transposed_rows(const DevTopology& t) {
  return {t.num_src_rows, t.t_offsets.data, t.t_edge.data, t.edge_dst.data, t.t_seg_row, t.t_seg_edge.data};
}
// An edge's weight: w[e] (1 when w is null); or with heads > 0, column c's is
// w[e * heads + c / f] (GAT's attention: head h owns columns [h*f, (h+1)*f)).
struct EdgeWeights {
  const float* w = nullptr;
  int heads = 0;
  int64_t f = 0;
};
// out[r] = Σ_e weight * x[nbr(e)] over each row's edges (transpose: added to
// out[r]); short rows add their edges in edge order, long rows by segments in
// `scratch` (segments x cols floats) added in segment order. False when no
// kernel takes the width (over 256 floats and not a multiple of 4, or over 1024).
bool spmm_rows(bool transpose, const SparseRows& rows, const EdgeWeights& wts, const float* x, int64_t cols,
               float* out, float* scratch, cudaStream_t s);
// `scratch` holds segments x cols floats (the long rows' partial sums per segment).
void spmm(const DevTopology& t, const float* x, int64_t cols, float* out, float* scratch, cudaStream_t s);
void spmm_transpose_add(const DevTopology& t, const float* dout, int64_t cols, float* dx, float* scratch,
                        cudaStream_t s);
void bias_act(float* z, const float* bias, int64_t rows, int64_t cols, Act act, float* h, cudaStream_t s);
void act_backward(const float* dh, const float* z, int64_t rows, int64_t cols, Act act, float* dz, cudaStream_t s);
// grad[c] += Σ_r m[r][c], in a fixed order; `scratch` holds col_sum_scratch_floats(rows, cols).
inline constexpr int64_t kColSumRows = 1024;  // rows per partial sum
int64_t col_sum_scratch_floats(int64_t rows, int64_t cols);
void col_sum_add(const float* m, int64_t rows, int64_t cols, float* grad, float* scratch, cudaStream_t s);
// out[c] += Σ_b partial[b][c] over `blocks` rows of partial sums, in block
// order (the second pass of fixed-order column sums).
void add_block_partials(const float* partial, int64_t blocks, int64_t cols, float* out, cudaStream_t s);
void dropout_rows(float* m, int64_t rows, int64_t cols, int64_t key_row0, const DropoutSpec& drop, cudaStream_t s);

// ---- cuSPARSE's inputs (cusparse_kernels.cu): what cusparseSpMM needs
// that the topology does not hold as it takes it (cusparse_spmm.hpp).
// out[i] = in[i] for i < n (row offsets narrowed to 32 bits; every value < 2^31).
void narrow_offsets(const int64_t* in, int64_t n, int32_t* out, cudaStream_t s);
// The transpose as a CSR of its own: col[k] = edge_dst[t_edge[k]] and
// val[k] = weight[t_edge[k]] (1 when weight is null), k < edges.
void transposed_csr(const uint32_t* t_edge, const uint32_t* edge_dst, const float* weight, int64_t edges,
                    uint32_t* col, float* val, cudaStream_t s);
// out[h * edges + e] = w[e * heads + h]: GAT's weights one head after another.
void head_major(const float* w, int64_t edges, int heads, float* out, cudaStream_t s);
// out[i] = value for i < n.
void fill(float* out, int64_t n, float value, cudaStream_t s);

// ---- GAT (gat_kernels.cu)
// `scratch`: gat_scores_scratch_floats(rows, heads) (each row's score terms per head).
int64_t gat_scores_scratch_floats(int64_t rows, int heads);
void gat_scores(const DevTopology& t, const float* g, int64_t rows, int64_t gcols, const float* att_src,
                const float* att_dst, int heads, float slope, float* pre, float* score, float* scratch, cudaStream_t s);
void gat_softmax(const DevTopology& t, int heads, const float* score, float* alpha, float* alpha_drop,
                 const DropoutSpec& attn, cudaStream_t s);
// `scratch`: the long rows' segments (segments x gcols floats) when the
// heads are concatenated or one.
void gat_aggregate(const DevTopology& t, const float* g, int64_t gcols, const float* alpha_drop, int heads,
                   bool mean, float* out, int64_t out_cols, float* scratch, cudaStream_t s);
// Scratch of gat_backward: the per-edge values, the per-row sums of the
// attention terms (source rows and destinations, at most `rows` each), the
// attention-vector gradients' partial sums (at most kDattBlocks tiles of
// rows), then the transposed rows' segments (DevTopology::t_seg_row).
inline constexpr int64_t kDattBlocks = 1024;
int64_t gat_backward_scratch_floats(int64_t edges, int64_t rows, int heads, int64_t gcols, int64_t segments);
void gat_backward(const DevTopology& t, const float* g, int64_t gcols, const float* att_src, const float* att_dst,
                  int heads, float slope, bool mean, const float* pre, const float* alpha, const float* alpha_drop,
                  const DropoutSpec& attn, const float* dout, int64_t dout_cols, float* dg, float* d_att_src,
                  float* d_att_dst, float* scratch, cudaStream_t s);

// ---- loss (loss_kernels.cu). `stats` is device memory: double loss, then
// 8 unsigned long long counters (correct[4], count[4]); the kernel adds to
// them (the caller clears them).
// The loss sum is reduced in a fixed order through `scratch`
// (softmax_xent_scratch_floats(rows) floats).
int64_t softmax_xent_scratch_floats(int64_t rows);
void softmax_xent(const float* logits, int64_t rows, int64_t cols, const int32_t* labels, const uint8_t* split,
                  int64_t first_vertex, float scale, float* dlogits, void* stats, float* scratch, cudaStream_t s);

}  // namespace ht::cuda
