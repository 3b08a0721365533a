#pragma once
// The executor interface: everything the training loop asks of a device.
// The CPU reference executor (cpu_executor.hpp) implements it with plain C++
// and OpenMP and can emulate m GPUs with separate buffers; the CUDA executor
// (lib/cuda/) implements it with its own kernels (SpMM, GAT, gathers), cuBLAS
// (dense products), cuSPARSE (the sparse products when --spmm picks it:
// engine/spmm_backend.hpp) and NCCL (all-reduce).
//
// Handles are plain pointers + sizes into device memory (host memory for the
// CPU executor); the loop never dereferences them. Every buffer is allocated
// at setup, sized from the plan: nothing is allocated inside the epoch loop.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/half.hpp"

namespace ht {

// Row-major matrix in device memory.
struct DevMat {
  float* data = nullptr;
  int64_t rows = 0, cols = 0;
  float* row(int64_t r) const { return data + r * cols; }
};
// Array in device memory.
template <typename T>
struct DevArray {
  T* data = nullptr;
  int64_t size = 0;
  DevArray sub(int64_t begin, int64_t count) const { return {data + begin, count}; }
};
using DevIdx = DevArray<uint32_t>;

// Row-major matrix of the vertex store: in host memory (pinned and mapped for
// the CUDA executor), or, in in-memory mode, in one device's memory
// (`device` >= 0); device ops address both the same way. Host matrices may
// hold 16-bit elements (--host-dtype): device ops widen them to fp32 as they
// load rows and round fp32 rows to the dtype as they store them
// (core/half.hpp; engine/host_rows.hpp for the host side).
struct HostMat {
  void* data = nullptr;
  int64_t rows = 0, cols = 0;
  int device = -1;  // -1: host memory
  StoreDtype dtype = StoreDtype::f32;
  // The rows that exist, [held_begin, held_end) (held_end -1: every row): a
  // process of a multi-process job holds only its own partitions' rows
  // (core/row_window.hpp); whole-matrix operations touch only those.
  int64_t held_begin = 0, held_end = -1;
  bool on_device() const { return device >= 0; }
  int64_t held_first() const { return held_begin; }
  int64_t held_last() const { return held_end < 0 ? rows : held_end; }  // one past
  bool holds(int64_t r) const { return r >= held_first() && r < held_last(); }
  int64_t elem_bytes() const { return dtype_bytes(dtype); }
  int64_t bytes() const { return rows * cols * elem_bytes(); }
  int64_t held_bytes() const { return (held_last() - held_first()) * cols * elem_bytes(); }  // the rows it holds
  std::byte* row_bytes(int64_t r) const { return static_cast<std::byte*>(data) + r * cols * elem_bytes(); }
  // fp32 matrices only.
  float* f32() const { return static_cast<float*>(data); }
  float* row(int64_t r) const { return f32() + r * cols; }
};

// Sparse topology of a chunk on a device: CSC over destinations (the chunk's
// vertices); each edge reads row src[e] of the input matrix. The transpose
// (grouped by source row) serves the backward scatter without atomics.
struct DevTopology {
  int64_t num_dst = 0, num_edges = 0, num_src_rows = 0;
  DevArray<int64_t> offsets;      // num_dst + 1
  DevIdx src;                     // num_edges: row of the input matrix
  DevArray<float> weight;         // num_edges (GCN normalization) or empty
  DevIdx dst_row;                 // num_dst: row of each destination in the input matrix
  // Transpose: edges grouped by source row.
  DevArray<int64_t> t_offsets;    // num_src_rows + 1
  DevIdx t_edge;                  // num_edges: edge ids grouped by source row
  DevIdx edge_dst;                // num_edges: destination (0..num_dst-1) of each edge
  DevArray<int64_t> edge_src_key; // num_edges: ORIGINAL src id (attention dropout key)
  DevArray<int64_t> edge_dst_key; // num_edges: ORIGINAL dst id
  // Rows with more than kLongRowEdges edges (hubs of skewed graphs), cut into
  // segments of at most kLongRowEdges edges that GPUs sum in parallel and then
  // add in segment order: segment k is row seg_row[k]'s edges (positions in
  // offsets, or t_offsets for the t_ pair) from seg_edge[k] up to the next
  // segment of the same row, or the row's end. Rows in ascending order.
  DevIdx seg_row, t_seg_row;
  DevArray<int64_t> seg_edge, t_seg_edge;
};

// A row with more edges than this is summed in segments (DevTopology::seg_row).
inline constexpr int64_t kLongRowEdges = 4096;
// The most long-row segments `edges` edges can give: a row of c >
// kLongRowEdges edges gives ceil(c / kLongRowEdges) < 2 c / kLongRowEdges
// (a derived step's room for its transpose's segments, DeriveTopology).
inline constexpr int64_t most_long_row_segments(int64_t edges) { return 2 * edges / kLongRowEdges + 1; }

// A resident step's topology derived on its device (Device::derive_topologies):
// the host packed the offsets (and the forward segments) and uploaded them
// with src from the plan; from them, and from each edge's source vertex, the device
// writes the rest of `topo` — edge_dst, dst_row (the destination's
// self-loop row; the last self-loop where there are several), weight (GCN:
// inv_sqrt_deg[u] * inv_sqrt_deg[v]; SAGE: inv_deg[v], 0 on the self-loop),
// the edge keys (orig_id of u and v), t_offsets and t_edge (each source row's
// edges, ascending), and t_seg_row / t_seg_edge up to their capacity (the
// slices' sizes): the bytes device_plan.cpp's make_topology writes on the
// host. Moves the host's per-edge work and most of the step's upload to the
// device (issue 33: the steps were most of setup on small graphs).
struct DeriveTopology {
  DevTopology topo;                 // bound to the step's block on the device
  std::span<const uint32_t> src_vid;  // host: each edge's source vertex (new id)
  int64_t dst_begin = 0;            // the first destination's vertex
  // src as the plan lists it: rows from shift_from on read `shift` rows
  // further (the second remote area: DevicePlan::remote_shift), shifted
  // first; then every row is checked against num_src_rows.
  uint32_t shift_from = UINT32_MAX, shift = 0;
  int part = 0, chunk = 0;          // (for errors)
};
// Edge-level data that does not depend on the mode (host memory): what a
// step's weights and keys are made of, on the host (device_plan.hpp) or on
// its device (Device::derive_topologies, which reads what the step's slices ask for).
struct EdgeKeys {
  std::span<const float> inv_sqrt_deg;  // GCN normalization per new id (empty for GAT)
  std::span<const int64_t> orig_id;     // new id -> graph file id (dropout keys)
  // SAGE's mean per new id (sage_inv_degree): an edge into v weighs inv_deg[v],
  // its self-loop 0. Empty for the other models; at most one of the two rules.
  std::span<const float> inv_deg = {};

  // What a derived step's slices ask for (DeriveTopology): the weight rule
  // where the step is weighted (SAGE's mean where given, else GCN's), the
  // ids where it is keyed; the rest empty.
  EdgeKeys for_step(bool weighted, bool keyed) const {
    EdgeKeys k;
    if (weighted && !inv_deg.empty()) k.inv_deg = inv_deg;
    else if (weighted) k.inv_sqrt_deg = inv_sqrt_deg;
    if (keyed) k.orig_id = orig_id;
    return k;
  }
};

// Dropout applied while gathering rows: keep(seed, epoch, layer, key[row], col).
struct DropoutSpec {
  bool active = false;
  float rate = 0.0f;
  uint64_t seed = 0;
  int epoch = 0, layer = 0;
  const int64_t* keys = nullptr;  // device array: ORIGINAL id of each new id
};

// Per-split counters of the loss kernel.
struct LossStats {
  double loss_sum = 0;  // sum of -log p(label) over training vertices in the rows
  int64_t correct[4] = {0, 0, 0, 0};  // by split code
  int64_t count[4] = {0, 0, 0, 0};
};

enum class Act { none, relu, elu };

// Each device runs work on a few queues (CUDA streams on a GPU). Work on one
// queue runs in issue order; queues run concurrently and are ordered only by
// events. Every device operation goes to the queue chosen with Device::use
// (compute by default). `peer` carries the P2P pulls of a batch while the
// batch before it computes (Trainer::issue_early_pulls).
enum class Queue : int { compute = 0, load = 1, store = 2, host = 3, peer = 4 };
inline constexpr int kNumQueues = 5;


// A mark in one device's queue, created at setup. record() places it after
// the work issued so far on a queue; wait() makes a queue's later work wait
// until the most recent record has completed (a queue of any device may wait
// for an event of any device: dependencies between GPUs need no host).
struct Event {
  int id = -1;
};

// What a stretch of queue work was doing, for the epoch's timeline.
enum class WorkKind : int { compute = 0, h2d = 1, d2h = 2, d2d = 3, host = 4 };
inline constexpr int kNumWorkKinds = 5;

// One stretch of work on a queue, seconds since the timeline's start.
struct BusyInterval {
  WorkKind kind = WorkKind::compute;
  double begin = 0, end = 0;
  int device = 0;
  Queue queue = Queue::compute;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual int index() const = 0;

  // ---- queues and events
  // Operations issued after this call go to `q` (until the next call).
  void use(Queue q) { queue_ = q; }
  Queue queue() const { return queue_; }
  virtual Event create_event() = 0;  // setup only
  virtual void record(Event e) = 0;  // on the current queue
  // The current queue's later work waits for `owner`'s event `e`.
  virtual void wait(const Device& owner, Event e) = 0;
  // Runs `fn` on the host once the current queue's earlier work has
  // completed; the queue's later work waits for it. `fn` must not call the
  // device (on a GPU it runs on the driver's callback thread).
  virtual void host_task(std::function<void()> fn) = 0;
  // Timeline: the current queue's work between begin_work and end_work is
  // one busy interval of `kind` (times taken when the queue gets there).
  virtual void begin_work() = 0;
  virtual void end_work(WorkKind kind) = 0;
  // Starts a new timeline (queues idle) / the intervals since (queues idle),
  // in seconds of the host's steady clock (std::chrono::steady_clock).
  virtual void reset_timeline() = 0;
  virtual std::vector<BusyInterval> timeline() = 0;

  // ---- memory (setup only)
  virtual int64_t allocated_bytes() const = 0;
  virtual DevMat alloc_mat(int64_t rows, int64_t cols) = 0;
  virtual DevArray<float> alloc_floats(int64_t n) = 0;
  virtual DevIdx upload(std::span<const uint32_t> v) = 0;
  virtual DevArray<int64_t> upload(std::span<const int64_t> v) = 0;
  virtual DevArray<float> upload(std::span<const float> v) = 0;
  virtual DevArray<uint8_t> upload(std::span<const uint8_t> v) = 0;
  virtual DevArray<int32_t> upload(std::span<const int32_t> v) = 0;
  virtual DevArray<std::byte> alloc_bytes(int64_t n) = 0;
  // dst[0, n) = src[0, n): host memory (pinned) or this device's memory to
  // device memory, queued.
  virtual void copy_bytes_in(const std::byte* src, DevArray<std::byte> dst, int64_t n) = 0;
  // dst[0, src.size()) = src from ordinary (pageable) host memory, on the
  // current queue after its earlier work; returns once `src` may be freed.
  // Setup only: blocks copied once (resident steps), which need no pinned
  // memory of their own (pinning gigabytes costs about a second per few GB).
  virtual void upload_bytes(std::span<const std::byte> src, DevArray<std::byte> dst) = 0;
  // dst[0, n) = src[0, n): device memory to host memory (pinned) or to this
  // device's memory, queued.
  virtual void copy_bytes_out(DevArray<std::byte> src, std::byte* dst, int64_t n) = 0;
  // 16-bit rows in device memory (dtype t, dst.rows x dst.cols elements) widened
  // to fp32, and fp32 rows rounded to t (nearest even) into device memory. The
  // trainer moves 16-bit rows over the link as bytes (copy engines) and
  // converts them on the compute queue, where they do not compete with compute
  // for the SMs as zero-copy conversion kernels on the copy queues would.
  virtual void widen_rows(DevArray<std::byte> src, StoreDtype t, DevMat dst) = 0;
  virtual void narrow_rows(DevMat src, StoreDtype t, DevArray<std::byte> dst) = 0;
  virtual void write(DevArray<float> dst, std::span<const float> src) = 0;  // small host->device copy
  virtual void read(DevArray<float> src, std::span<float> dst) = 0;        // small device->host copy

  // Reserves per-device working memory used inside ops (GAT backward
  // scratch, the partial sums of column sums and of the loss, which keep
  // those sums in a fixed order), so that nothing is allocated in the epoch
  // loop; row_ops_scratch says what col_sum_add and softmax_xent of a
  // rows x cols matrix need.
  virtual void reserve(int64_t scratch_floats) { (void)scratch_floats; }
  virtual int64_t row_ops_scratch(int64_t rows, int64_t cols) const {
    (void)rows;
    (void)cols;
    return 0;
  }
  // What spmm and spmm_transpose_add of a topology with `segments` long-row
  // segments (DevTopology::seg_row) and `cols` columns need.
  virtual int64_t spmm_scratch(int64_t segments, int64_t cols) const {
    (void)segments;
    (void)cols;
    return 0;
  }
  // What gat_scores and gat_backward over `edges` edges, an input of `rows`
  // rows, `heads` heads and gcols columns need, besides spmm_scratch for the
  // transposed rows' segments.
  virtual int64_t gat_scratch(int64_t edges, int64_t rows, int heads, int64_t gcols) const {
    (void)rows;
    (void)gcols;
    return edges * heads;
  }

  // ---- communication
  // dst[dst_rows[k]] = drop(src[src_rows[k]]): sparse rows from host (zero-copy gather).
  virtual void gather_from_host(const HostMat& src, DevIdx src_rows, DevIdx dst_rows, DevMat dst,
                                const DropoutSpec& drop) = 0;
  // dst[dst_row0 + r] = src[src_row0 + r] for r < n (contiguous, memcpy).
  virtual void copy_from_host(const HostMat& src, int64_t src_row0, int64_t n, DevMat dst, int64_t dst_row0) = 0;
  virtual void copy_to_host(DevMat src, int64_t src_row0, int64_t n, const HostMat& dst, int64_t dst_row0) = 0;
  // dst[dst_row0 + k] = peer_src[peer_rows[k]] (P2P pull from another device).
  virtual void pull_from_peer(Device& peer, DevMat peer_src, DevIdx peer_rows, DevMat dst, int64_t dst_row0) = 0;
  // dst[dst_rows[k]] = src[src_rows[k]]: rows packed for a copy to a peer
  // (early pulls; the index lists may be the peer's), moved between the
  // remote areas of the merged buffer, or pulled from a peer's (`src` in its
  // memory) into scattered rows (kept remote rows).
  virtual void gather_rows(DevMat src, DevIdx src_rows, DevMat dst, DevIdx dst_rows) = 0;
  // peer_dst = src, a peer's memory, on the copy engines (early pulls).
  virtual void copy_to_peer(DevMat src, Device& peer, DevMat peer_dst) = 0;
  // peer_dst[peer_rows[k]] += src[src_row0 + k] (P2P push-accumulate).
  virtual void push_add_to_peer(DevMat src, int64_t src_row0, Device& peer, DevMat peer_dst, DevIdx peer_rows) = 0;
  // dst[dst_rows[k]] += src[src_rows[k]], then src[src_rows[k]] = 0: gradient
  // rows returned into a vertex-store matrix in this device's memory
  // (in-memory mode, the GPU cache and its row tier; host stores go through
  // compact_and_zero, a copy and a host task). A 16-bit `dst` adds as the
  // host adds a staged piece: the source row rounded to the dtype, widened,
  // added in fp32 and rounded once (the same bits as the host path).
  virtual void add_rows_and_zero(DevMat src, DevIdx src_rows, DevIdx dst_rows, const HostMat& dst) = 0;
  // dst[dst_rows[k]] = src[src_rows[k]], then src[src_rows[k]] = 0: gradient
  // rows returned for the first time in a layer, written by the device
  // straight into the vertex store (mapped host memory or device memory).
  virtual void scatter_rows_and_zero(DevMat src, DevIdx src_rows, DevIdx dst_rows, const HostMat& dst) = 0;
  // staging[k] = src[rows[k]]; src[rows[k]] = 0 (gradient rows leaving the device).
  virtual void compact_and_zero(DevMat src, DevIdx rows, DevMat staging) = 0;
  virtual void zero(DevMat m, int64_t row0, int64_t n) = 0;
  virtual void zero(DevArray<float> a) = 0;
  // dst = src (same shape, device memory), on the current queue.
  virtual void copy(DevMat src, DevMat dst) = 0;

  // ---- dense and sparse compute
  // C = alpha * op(A) * op(B) + beta * C (row-major; op = transpose when flagged).
  virtual void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) = 0;
  // out[d] = Σ_e weight[e] * x[src[e]] (weight 1 when empty).
  virtual void spmm(const DevTopology& t, DevMat x, DevMat out) = 0;
  // dx[r] += Σ_{e: src[e]=r} weight[e] * dout[dst(e)] (transpose SpMM).
  virtual void spmm_transpose_add(const DevTopology& t, DevMat dout, DevMat dx) = 0;
  // h = act(z + bias) (bias may be empty); z is kept.
  virtual void bias_act(DevMat z, DevArray<float> bias, Act act, DevMat h) = 0;
  // dz = dh * act'(z) (z before activation, bias included).
  virtual void act_backward(DevMat dh, DevMat z, Act act, DevMat dz) = 0;
  // grad[c] += Σ_r m[r][c].
  virtual void col_sum_add(DevMat m, DevArray<float> grad) = 0;
  // Dropout backward on contiguous rows: m[r][c] *= keep(row0 + r)/(1-p).
  virtual void dropout_rows(DevMat m, int64_t key_row0, const DropoutSpec& drop) = 0;

  // ---- GAT (heads side by side in g; per-head width f)
  // score[e*H+h] = LeakyReLU(att_src[h]·g[src[e]][h] + att_dst[h]·g[dst_row[d]][h]); keep pre-activation in pre.
  virtual void gat_scores(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst, int heads,
                          float slope, DevArray<float> pre, DevArray<float> score) = 0;
  // alpha = softmax of score over each destination's in-edges, then attention
  // dropout (mask keyed by original ids), per head.
  virtual void gat_softmax(const DevTopology& t, int heads, DevArray<float> score, DevArray<float> alpha,
                           DevArray<float> alpha_drop, const DropoutSpec& attn) = 0;
  // out[d][h] = Σ_e alpha_drop[e,h] * g[src[e]][h], then concat (mean=false) or mean over heads.
  virtual void gat_aggregate(const DevTopology& t, DevMat g, DevArray<float> alpha_drop, int heads, bool mean,
                             DevMat out) = 0;
  // Backward of gat_aggregate + gat_softmax + gat_scores: given dout, writes
  // dg (all rows of g; zeroed first) and adds d att_src / d att_dst.
  virtual void gat_backward(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst,
                            int heads, float slope, bool mean, DevArray<float> pre, DevArray<float> alpha,
                            DevArray<float> alpha_drop, const DropoutSpec& attn, DevMat dout, DevMat dg,
                            DevArray<float> d_att_src, DevArray<float> d_att_dst) = 0;

  // ---- loss: rows r of logits are vertices first_vertex + r (new ids).
  // Writes dlogits = (softmax - onehot) * scale for training rows (0 else);
  // adds the loss and the correct predictions per split to the device's
  // statistics, which take_loss_stats reads (waiting for the device) and clears.
  virtual void softmax_xent(DevMat logits, DevArray<int32_t> labels, DevArray<uint8_t> split, int64_t first_vertex,
                            float scale, DevMat dlogits) = 0;
  virtual LossStats take_loss_stats() = 0;

  // Waits for the work of every queue of this device (host tasks included).
  virtual void synchronize() = 0;

  // ---- setup: resident steps' topology (DeriveTopology), each step's
  // transpose segments returned; waits for the device's queues first and for
  // the derivation before returning. Throws where a destination has no
  // self-loop, or (a GPU) where its working memory (about 12 bytes per edge
  // of the largest step) cannot be had: the caller then derives on the host.
  virtual std::vector<int64_t> derive_topologies(std::span<const DeriveTopology> steps,
                                                 const EdgeKeys& vertices) = 0;

 protected:
  Queue queue_ = Queue::compute;
};

class Transport;  // engine/transport.hpp

// The multi-process job this executor's devices belong to: they are the
// job's devices first_device ... first_device + num_devices() - 1 of
// job_devices, and every process has the same number of devices.
struct JobLayout {
  Transport* transport = nullptr;  // null: one process
  int first_device = 0;
  int job_devices = 0;
};

// One transfer of an exchange between a device of this process and a device
// of another process: `floats` contiguous values of device memory.
struct RowTransfer {
  int device = 0;  // this process's device (local index)
  int peer = 0;    // the other device (job index)
  bool send = true;
  float* data = nullptr;
  int64_t floats = 0;
};

// Bytes moved per link, for the summary and the metrics file.
struct LinkCounters {
  int64_t h2d_bytes = 0, d2h_bytes = 0, p2p_bytes = 0, reuse_bytes = 0;
  int64_t h2d_rows = 0, d2h_rows = 0, p2p_rows = 0, reuse_rows = 0;
  // Rows read from the GPU cache (TrainerOptions::gpu_cache) instead of the host.
  int64_t cache_bytes = 0, cache_rows = 0;
  // Rows sent to devices of other processes (a multi-process job; also in p2p_*).
  int64_t net_bytes = 0, net_rows = 0;
  // Of p2p_rows: pulled while the batch before computed (Trainer::issue_early_pulls).
  int64_t p2p_early_rows = 0;
};

// Seconds the host vertex buffers (alloc_host, alloc_host_rows) that the
// calling thread allocated took so far: faulting their pages in, and pinning
// them (the CUDA executor's registration of large ones). A running sum per
// thread, so that the difference across a thread's own allocations is theirs
// alone while another thread allocates too. The setup summary's parts of the
// vertex store.
struct HostAllocTimes {
  double pages = 0, pinned = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  virtual int num_devices() const = 0;
  virtual Device& device(int i) = 0;
  // Host vertex buffers (pinned + mapped for the CUDA executor), zeroed.
  // alloc_host, alloc_host_rows and alloc_pinned_bytes may run in two
  // threads at once (Trainer allocates the vertex store beside the device
  // plans); nothing else of an executor may.
  // With `pin` false, a large buffer's pages are faulted in but not pinned
  // until pin_host (the vertex store: a matrix the GPU cache holds whole is
  // never read by a device from the host, so it is not pinned at all).
  virtual HostMat alloc_host(int64_t rows, int64_t cols, StoreDtype dtype = StoreDtype::f32, bool pin = true) = 0;
  // Only rows [begin, end) of a rows x cols vertex buffer, at their places
  // (core/row_window.hpp), zeroed.
  virtual HostMat alloc_host_rows(int64_t rows, int64_t cols, StoreDtype dtype, int64_t begin, int64_t end,
                                  bool pin = true) = 0;
  // Pins a buffer of alloc_host or alloc_host_rows made with `pin` false (its
  // seconds in host_alloc_times' `pinned`); nothing when it is pinned.
  // Device ops that read or write host rows (gather_from_host, copy_from_host,
  // copy_to_host, add_rows_and_zero, scatter_rows_and_zero) need pinned
  // buffers; copy_bytes_in and upload_bytes take any memory. Not beside
  // device ops that touch the buffer.
  virtual void pin_host(const HostMat& m) { (void)m; }
  // Whether a host buffer of alloc_host or alloc_host_rows is pinned (the
  // CUDA executor: small buffers always are; the CPU executor emulates it).
  virtual bool host_pinned(const HostMat& m) const {
    (void)m;
    return true;
  }
  // Host bytes the devices copy from (pinned for the CUDA executor), not zeroed.
  virtual std::byte* alloc_pinned_bytes(int64_t n) = 0;
  virtual HostAllocTimes host_alloc_times() const { return {}; }
  // Called first in a thread that allocates host buffers beside the one that
  // made the executor (CUDA: makes the executor's first GPU current there).
  virtual void enter_thread() {}
  // Called in the thread that drives the executor when another thread made
  // it (ht-train's setup makes it beside reading the files, issue 33): this
  // thread's device state as the maker's was when the constructor returned
  // (CUDA: the GPU it made current last), as if it had been made here.
  virtual void adopt_thread() {}
  // Whether devices have memory of their own (in-memory mode is possible).
  virtual bool has_device_memory() const { return false; }
  // In-memory mode: a vertex-store matrix in device `device`'s memory, or
  // nothing ({} with data == nullptr) when the executor has no device memory.
  virtual HostMat alloc_store_on_device(int device, int64_t rows, int64_t cols) {
    (void)device;
    (void)rows;
    (void)cols;
    return {};
  }
  // Whole-matrix operations on vertex-store matrices wherever they live (on
  // the rows they hold: store_read leaves the others of `dst` as they were).
  virtual void store_fill(const HostMat& dst, std::span<const float> src);
  virtual void store_zero(const HostMat& dst);
  virtual void store_read(const HostMat& src, std::span<float> dst);
  // Sum of `grads[i]` over the job's devices (every process's), result on
  // every device (all-reduce).
  virtual void allreduce_sum(std::span<DevArray<float>> per_device) = 0;

  // ---- several processes (engine/transport.hpp)
  // Makes this executor one process's part of a job, before any Trainer is
  // made (the CUDA executor creates its job-wide NCCL communicators here).
  virtual void join(const JobLayout& job);
  const JobLayout& job() const { return job_; }
  bool multi_process() const { return job_.transport != nullptr; }
  int first_device() const { return job_.first_device; }
  int job_devices() const { return multi_process() ? job_.job_devices : num_devices(); }
  bool is_local(int job_device) const {
    return job_device >= first_device() && job_device < first_device() + num_devices();
  }
  int process_of(int job_device) const { return job_device / num_devices(); }
  // The transfers of `group`, all at once (a send and its receive may be in
  // the same group on both sides: no order between them can deadlock), each
  // after the earlier work of its device's current queue and before the
  // later. Every process issues its side of the same exchanges in the same
  // order; transfers between two devices match in that order.
  virtual void exchange(std::span<const RowTransfer> group);
  // all[k * mine.size() ...] = job device k's `mine`, for every device of the
  // job (`mine` holds this process's devices' values, device by device).
  void allgather_devices(std::span<const std::byte> mine, std::span<std::byte> all);
  virtual void synchronize_all() {
    for (int i = 0; i < num_devices(); ++i) device(i).synchronize();
  }
  virtual int64_t peak_device_bytes() const { return 0; }
  // Bytes a device may allocate (0 = no limit, e.g. the CPU executor).
  virtual int64_t memory_limit(int device) const {
    (void)device;
    return 0;
  }
  virtual int64_t host_bytes() const { return 0; }
  LinkCounters& counters() { return counters_; }

 protected:
  LinkCounters counters_;
  JobLayout job_;
};

}  // namespace ht
