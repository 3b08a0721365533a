#include "engine/cpu_executor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include <cblas.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "engine/device_plan.hpp"
#include "engine/host_rows.hpp"
#include "engine/transport.hpp"
#include "models/model.hpp"

namespace ht {
namespace {

inline float activate(float x, Act a) {
  switch (a) {
    case Act::relu: return x > 0 ? x : 0.0f;
    case Act::elu: return x > 0 ? x : std::expm1(x);
    case Act::none: break;
  }
  return x;
}
inline float activate_grad(float z, Act a) {
  switch (a) {
    case Act::relu: return z > 0 ? 1.0f : 0.0f;
    case Act::elu: return z > 0 ? 1.0f : std::exp(z);
    case Act::none: break;
  }
  return 1.0f;
}
// row[j] *= (dropout_keep(..., key, j, rate) ? 1 / (1 - rate) : 0) for every j,
// with the row's part of the hash computed once; zeros stay zeros without
// hashing (sparse features are mostly zeros). Same bits as element by element.
inline void scale_row(const DropoutSpec& d, int64_t key, float* row, int64_t cols) {
  const uint64_t h = dropout_row_hash(d.seed, d.epoch, d.layer, key);
  const float s = 1.0f / (1.0f - d.rate);
  for (int64_t j = 0; j < cols; ++j) {
    if (row[j] == 0.0f) continue;
    row[j] *= dropout_keep_col(h, static_cast<int>(j), d.rate) ? s : 0.0f;
  }
}
inline float attn_scale(const DropoutSpec& d, int head, int64_t src, int64_t dst) {
  if (!d.active) return 1.0f;
  return attn_dropout_keep(d.seed, d.epoch, d.layer, head, src, dst, d.rate) ? 1.0f / (1.0f - d.rate) : 0.0f;
}

}  // namespace

DevMat CpuDevice::alloc_mat(int64_t rows, int64_t cols) {
  f32_.emplace_back(static_cast<size_t>(rows * cols), 0.0f);
  bytes_ += rows * cols * 4;
  return {f32_.back().data(), rows, cols};
}

DevArray<float> CpuDevice::alloc_floats(int64_t n) {
  f32_.emplace_back(static_cast<size_t>(n), 0.0f);
  bytes_ += n * 4;
  return {f32_.back().data(), n};
}

DevArray<std::byte> CpuDevice::alloc_bytes(int64_t n) {
  bytes_pool_.emplace_back(static_cast<size_t>(n), std::byte{0});
  bytes_ += n;
  return {bytes_pool_.back().data(), n};
}

void CpuDevice::copy_bytes_in(const std::byte* src, DevArray<std::byte> dst, int64_t n) {
  HT_ASSERT(n <= dst.size);
  if (n > 0) enqueue([=] { std::memcpy(dst.data, src, static_cast<size_t>(n)); });
}

void CpuDevice::upload_bytes(std::span<const std::byte> src, DevArray<std::byte> dst) {
  HT_ASSERT(static_cast<int64_t>(src.size()) <= dst.size);
  synchronize();  // after the queue's earlier work; `src` is read before this returns
  if (!src.empty()) parallel_copy(dst.data, src.data(), src.size());
}

void CpuDevice::copy_bytes_out(DevArray<std::byte> src, std::byte* dst, int64_t n) {
  HT_ASSERT(n <= src.size);
  if (n > 0) enqueue([=] { std::memcpy(dst, src.data, static_cast<size_t>(n)); });
}

void CpuDevice::widen_rows(DevArray<std::byte> src, StoreDtype t, DevMat dst) {
  HT_ASSERT(t != StoreDtype::f32 && dst.rows * dst.cols * 2 <= src.size);
  enqueue([=] {
    const HostMat rows{src.data, dst.rows, dst.cols, -1, t};
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < dst.rows; ++r) load_row(rows, r, dst.row(r), dst.cols);
  });
}

void CpuDevice::narrow_rows(DevMat src, StoreDtype t, DevArray<std::byte> dst) {
  HT_ASSERT(t != StoreDtype::f32 && src.rows * src.cols * 2 <= dst.size);
  enqueue([=] {
    const HostMat rows{dst.data, src.rows, src.cols, -1, t};
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < src.rows; ++r) store_row(rows, r, src.row(r), src.cols);
  });
}

// Parameters change between epochs, when every queue is idle.
void CpuDevice::write(DevArray<float> dst, std::span<const float> src) {
  HT_ASSERT(static_cast<int64_t>(src.size()) <= dst.size);
  synchronize();
  std::copy(src.begin(), src.end(), dst.data);
}
void CpuDevice::read(DevArray<float> src, std::span<float> dst) {
  HT_ASSERT(static_cast<int64_t>(dst.size()) <= src.size);
  synchronize();
  std::copy(src.data, src.data + dst.size(), dst.begin());
}

// ---- queues

void CpuDevice::enqueue(std::function<void()> op) {
  QueueState& q = state(queue_);
  ++q.issued;
  if (deferred(queue_)) {
    q.pending.push_back(std::move(op));
    return;
  }
  run_until(queue_, q.issued - 1);  // nothing may overtake earlier deferred work
  ++q.done;
  op();
}

void CpuDevice::run_until(Queue which, int64_t pos) {
  QueueState& q = state(which);
  if (q.done >= pos) return;
  // A queue forced while it runs an operation means events wait on each other
  // in a cycle: a GPU would hang.
  HT_CHECK(!q.running, "emulated device {}: event cycle on queue {}", index_, static_cast<int>(which));
  q.running = true;
  while (q.done < pos) {
    std::function<void()> op = std::move(q.pending.front());
    q.pending.pop_front();
    ++q.done;
    op();
  }
  q.running = false;
}

Event CpuDevice::create_event() {
  events_.push_back({});
  return {static_cast<int>(events_.size()) - 1};
}

void CpuDevice::record(Event e) {
  HT_ASSERT(e.id >= 0 && e.id < static_cast<int>(events_.size()));
  events_[e.id] = {queue_, state(queue_).issued};
}

void CpuDevice::wait(const Device& owner_base, Event e) {
  // Waiting may run the owner's deferred operations (that is what "the event
  // completes" means here), so the owner is changed through a const view.
  auto& owner = const_cast<CpuDevice&>(static_cast<const CpuDevice&>(owner_base));
  HT_ASSERT(e.id >= 0 && e.id < static_cast<int>(owner.events_.size()));
  const Mark mark = owner.events_[e.id];
  enqueue([&owner, mark] { owner.run_until(mark.queue, mark.position); });
}

void CpuDevice::host_task(std::function<void()> fn) { enqueue(std::move(fn)); }

void CpuDevice::begin_work() {
  const Queue q = queue_;
  enqueue([this, q] { state(q).open = steady_seconds(); });
}

void CpuDevice::end_work(WorkKind kind) {
  const Queue q = queue_;
  enqueue([this, q, kind] { intervals_.push_back({kind, state(q).open, steady_seconds(), index_, q}); });
}

void CpuDevice::reset_timeline() {
  synchronize();
  intervals_.clear();
}

std::vector<BusyInterval> CpuDevice::timeline() {
  synchronize();
  return intervals_;
}

// The device's memory is the host's: the derivation the host would do,
// after the queues' earlier work (the steps' uploads).
std::vector<int64_t> CpuDevice::derive_topologies(std::span<const DeriveTopology> steps,
                                                  const EdgeKeys& vertices) {
  synchronize();
  std::vector<int64_t> segments;
  for (const DeriveTopology& d : steps) segments.push_back(derive_topology_on_host(d, vertices));
  return segments;
}

void CpuDevice::synchronize() {
  // Deferred operations may force other queues (of this device or a peer),
  // so run until nothing is left.
  for (bool more = true; more;) {
    more = false;
    for (int q = 0; q < kNumQueues; ++q) {
      if (queues_[q].done < queues_[q].issued) {
        run_until(static_cast<Queue>(q), queues_[q].issued);
        more = true;
      }
    }
  }
}

void CpuDevice::gather_from_host(const HostMat& src, DevIdx src_rows, DevIdx dst_rows, DevMat dst,
                                 const DropoutSpec& drop) {
  check_pinned(src, "gather_from_host");
  enqueue([=, this] {
    HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
    const int64_t c = src.cols;
  #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < src_rows.size; ++k) {
      const int64_t sr = src_rows.data ? src_rows.data[k] : k;
      float* d = dst.row(dst_rows.data ? dst_rows.data[k] : k);
      load_row(src, sr, d, c);
      if (drop.active) scale_row(drop, drop.keys[sr], d, c);
    }
  });
}

void CpuDevice::copy_from_host(const HostMat& src, int64_t src_row0, int64_t n, DevMat dst, int64_t dst_row0) {
  check_pinned(src, "copy_from_host");
  enqueue([=, this] {
    HT_ASSERT(src.cols == dst.cols);
    if (n <= 0) return;
    if (src.dtype == StoreDtype::f32) {
      std::memcpy(dst.row(dst_row0), src.row(src_row0), static_cast<size_t>(n * src.cols) * 4);
      return;
    }
  #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n; ++r) load_row(src, src_row0 + r, dst.row(dst_row0 + r), src.cols);
  });
}

void CpuDevice::copy_to_host(DevMat src, int64_t src_row0, int64_t n, const HostMat& dst, int64_t dst_row0) {
  check_pinned(dst, "copy_to_host");
  enqueue([=, this] {
    HT_ASSERT(src.cols == dst.cols);
    if (n <= 0) return;
    if (dst.dtype == StoreDtype::f32) {
      std::memcpy(dst.row(dst_row0), src.row(src_row0), static_cast<size_t>(n * src.cols) * 4);
      return;
    }
  #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n; ++r) store_row(dst, dst_row0 + r, src.row(src_row0 + r), src.cols);
  });
}

void CpuDevice::pull_from_peer(Device&, DevMat peer_src, DevIdx peer_rows, DevMat dst, int64_t dst_row0) {
  enqueue([=, this] {
    HT_ASSERT(peer_src.cols == dst.cols);
  #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < peer_rows.size; ++k)
      std::memcpy(dst.row(dst_row0 + k), peer_src.row(peer_rows.data[k]), static_cast<size_t>(dst.cols) * 4);
  });
}

void CpuDevice::gather_rows(DevMat src, DevIdx src_rows, DevMat dst, DevIdx dst_rows) {
  HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
  enqueue([=] {
  #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < src_rows.size; ++k)
      std::memcpy(dst.row(dst_rows.data[k]), src.row(src_rows.data[k]), static_cast<size_t>(dst.cols) * 4);
  });
}

void CpuDevice::copy_to_peer(DevMat src, Device&, DevMat peer_dst) {
  HT_ASSERT(src.rows == peer_dst.rows && src.cols == peer_dst.cols);
  enqueue([=] {
    if (src.rows > 0) std::memcpy(peer_dst.data, src.data, static_cast<size_t>(src.rows * src.cols) * 4);
  });
}

void CpuDevice::push_add_to_peer(DevMat src, int64_t src_row0, Device&, DevMat peer_dst, DevIdx peer_rows) {
  enqueue([=, this] {
    HT_ASSERT(peer_dst.cols == src.cols);
  #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < peer_rows.size; ++k) {
      const float* s = src.row(src_row0 + k);
      float* d = peer_dst.row(peer_rows.data[k]);
      for (int64_t j = 0; j < src.cols; ++j) d[j] += s[j];
    }
  });
}

void CpuDevice::add_rows_and_zero(DevMat src, DevIdx src_rows, DevIdx dst_rows, const HostMat& dst) {
  check_pinned(dst, "add_rows_and_zero");
  HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
  enqueue([=] {
    if (dst.dtype != StoreDtype::f32) {  // the host's staged add (host_rows.hpp): piece rounded, one rounding
#pragma omp parallel
      {
        std::vector<uint16_t> rounded(static_cast<size_t>(src.cols));
        const HostMat p{rounded.data(), 1, src.cols, -1, dst.dtype};
#pragma omp for schedule(static)
        for (int64_t k = 0; k < src_rows.size; ++k) {
          float* s = src.row(src_rows.data[k]);
          store_row(p, 0, s, src.cols);
          add_row(dst, dst_rows.data[k], p, 0);
          std::memset(s, 0, static_cast<size_t>(src.cols) * 4);
        }
      }
      return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < src_rows.size; ++k) {
      float* s = src.row(src_rows.data[k]);
      float* d = dst.row(dst_rows.data[k]);
      for (int64_t j = 0; j < src.cols; ++j) d[j] += s[j];
      std::memset(s, 0, static_cast<size_t>(src.cols) * 4);
    }
  });
}

void CpuDevice::scatter_rows_and_zero(DevMat src, DevIdx src_rows, DevIdx dst_rows, const HostMat& dst) {
  check_pinned(dst, "scatter_rows_and_zero");
  HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
  enqueue([=] {
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < src_rows.size; ++k) {
      float* s = src.row(src_rows.data[k]);
      store_row(dst, dst_rows.data[k], s, src.cols);
      std::memset(s, 0, static_cast<size_t>(src.cols) * 4);
    }
  });
}

void CpuDevice::compact_and_zero(DevMat src, DevIdx rows, DevMat staging) {
  HT_ASSERT(src.cols == staging.cols && rows.size <= staging.rows);
  enqueue([=] {
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < rows.size; ++k) {
      float* s = src.row(rows.data[k]);
      std::memcpy(staging.row(k), s, static_cast<size_t>(src.cols) * 4);
      std::memset(s, 0, static_cast<size_t>(src.cols) * 4);
    }
  });
}

void CpuDevice::zero(DevMat m, int64_t row0, int64_t n) {
  if (n > 0) enqueue([=] { std::memset(m.row(row0), 0, static_cast<size_t>(n * m.cols) * 4); });
}
void CpuDevice::zero(DevArray<float> a) {
  if (a.size > 0) enqueue([=] { std::memset(a.data, 0, static_cast<size_t>(a.size) * 4); });
}
void CpuDevice::copy(DevMat src, DevMat dst) {
  HT_CHECK(src.rows == dst.rows && src.cols == dst.cols, "device copy of {}x{} rows into {}x{}", src.rows, src.cols,
           dst.rows, dst.cols);
  if (src.rows * src.cols > 0)
    enqueue([=] { std::memcpy(dst.data, src.data, static_cast<size_t>(src.rows * src.cols) * 4); });
}

// Dense products: OpenBLAS (cblas_sgemm), one BLAS thread per call, the rows
// of C cut into fixed blocks of kGemmRowBlock that OpenMP spreads over the
// cores. One thread pool (OpenMP's) instead of two that would spin against
// each other, and a result that depends only on the shape: a row's block and
// its place in it follow from m alone, not from the thread count. (OpenBLAS's
// kernels sum a row differently depending on where it sits in the block, so
// the products of two different row splits agree to rounding, not bit for bit.)
namespace {
constexpr int64_t kGemmRowBlock = 256;
void blas_on_calling_thread() {
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}
}  // namespace

void CpuDevice::gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                     const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  // Row-major: A is m x k (or k x m if ta), B is k x n (or n x k if tb).
  HT_ASSERT(m >= 0 && n >= 0 && k >= 0 && ldc >= std::max<int64_t>(n, 1));
  HT_ASSERT(lda >= std::max<int64_t>(ta ? m : k, 1) && ldb >= std::max<int64_t>(tb ? k : n, 1));
  HT_ASSERT(std::max({n, k, lda, ldb, ldc}) <= INT32_MAX);  // the BLAS takes int
  blas_on_calling_thread();
  enqueue([=, this] {
    if (m == 0 || n == 0) return;
    const int64_t blocks = (m + kGemmRowBlock - 1) / kGemmRowBlock;
  #pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t r0 = blk * kGemmRowBlock, rows = std::min(kGemmRowBlock, m - r0);
      float* cb = c + r0 * ldc;
      if (k == 0) {  // C = beta C (the BLAS would too; spelled out for beta = 0 over NaNs)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < n; ++j) cb[i * ldc + j] = beta == 0.0f ? 0.0f : beta * cb[i * ldc + j];
        continue;
      }
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(rows),
                  static_cast<int>(n), static_cast<int>(k), alpha, ta ? a + r0 : a + r0 * lda, static_cast<int>(lda), b,
                  static_cast<int>(ldb), beta, cb, static_cast<int>(ldc));
    }
  });
}

// SpMM, both directions: one output row at a time (it stays in L1 while the
// source rows, whole cache lines, stream in), no atomics (the transpose runs
// over the edges grouped by source). Small products run on the calling thread:
// a parallel region costs more than they do.
namespace {
constexpr int64_t kSpmmParallelWork = int64_t{1} << 16;  // multiply-adds
}  // namespace

void CpuDevice::spmm(const DevTopology& t, DevMat x, DevMat out) {
  enqueue([=, this] {
    HT_ASSERT(x.cols == out.cols);
    const int64_t c = x.cols;
    const int64_t work = t.num_edges * c;
  #pragma omp parallel for schedule(dynamic, 64) if (work >= kSpmmParallelWork)
    for (int64_t d = 0; d < t.num_dst; ++d) {
      float* o = out.row(d);
      std::fill(o, o + c, 0.0f);
      for (int64_t e = t.offsets.data[d]; e < t.offsets.data[d + 1]; ++e) {
        const float w = t.weight.size ? t.weight.data[e] : 1.0f;
        const float* xs = x.row(t.src.data[e]);
        for (int64_t j = 0; j < c; ++j) o[j] += w * xs[j];
      }
    }
  });
}

void CpuDevice::spmm_transpose_add(const DevTopology& t, DevMat dout, DevMat dx) {
  enqueue([=, this] {
    HT_ASSERT(dout.cols == dx.cols);
    const int64_t c = dx.cols;
    const int64_t work = t.num_edges * c;
  #pragma omp parallel for schedule(dynamic, 64) if (work >= kSpmmParallelWork)
    for (int64_t r = 0; r < t.num_src_rows; ++r) {
      float* o = dx.row(r);
      for (int64_t k = t.t_offsets.data[r]; k < t.t_offsets.data[r + 1]; ++k) {
        const uint32_t e = t.t_edge.data[k];
        const float w = t.weight.size ? t.weight.data[e] : 1.0f;
        const float* g = dout.row(t.edge_dst.data[e]);
        for (int64_t j = 0; j < c; ++j) o[j] += w * g[j];
      }
    }
  });
}

void CpuDevice::bias_act(DevMat z, DevArray<float> bias, Act act, DevMat h) {
  enqueue([=, this] {
  #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < z.rows; ++r) {
      float* zr = z.row(r);
      float* hr = h.row(r);
      for (int64_t j = 0; j < z.cols; ++j) {
        if (bias.size) zr[j] += bias.data[j];
        hr[j] = activate(zr[j], act);
      }
    }
  });
}

void CpuDevice::act_backward(DevMat dh, DevMat z, Act act, DevMat dz) {
  enqueue([=, this] {
  #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < dh.rows; ++r)
      for (int64_t j = 0; j < dh.cols; ++j) dz.row(r)[j] = dh.row(r)[j] * activate_grad(z.row(r)[j], act);
  });
}

void CpuDevice::col_sum_add(DevMat m, DevArray<float> grad) {
  enqueue([=, this] {
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t j = 0; j < m.cols; ++j) grad.data[j] += m.row(r)[j];
  });
}

void CpuDevice::dropout_rows(DevMat m, int64_t key_row0, const DropoutSpec& drop) {
  enqueue([=, this] {
    if (!drop.active) return;
  #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < m.rows; ++r) {
      scale_row(drop, drop.keys[key_row0 + r], m.row(r), m.cols);
    }
  });
}

void CpuDevice::gat_scores(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst,
                           int heads, float slope, DevArray<float> pre, DevArray<float> score) {
  enqueue([=, this] {
    const int64_t f = g.cols / heads;
  #pragma omp parallel for schedule(dynamic, 64)
    for (int64_t d = 0; d < t.num_dst; ++d) {
      const float* gd = g.row(t.dst_row.data[d]);
      for (int64_t e = t.offsets.data[d]; e < t.offsets.data[d + 1]; ++e) {
        const float* gs = g.row(t.src.data[e]);
        for (int h = 0; h < heads; ++h) {
          float s = 0;
          for (int64_t j = 0; j < f; ++j)
            s += att_src.data[h * f + j] * gs[h * f + j] + att_dst.data[h * f + j] * gd[h * f + j];
          pre.data[e * heads + h] = s;
          score.data[e * heads + h] = s > 0 ? s : slope * s;
        }
      }
    }
  });
}

void CpuDevice::gat_softmax(const DevTopology& t, int heads, DevArray<float> score, DevArray<float> alpha,
                            DevArray<float> alpha_drop, const DropoutSpec& attn) {
  enqueue([=, this] {
  #pragma omp parallel for schedule(dynamic, 64)
    for (int64_t d = 0; d < t.num_dst; ++d) {
      const int64_t b = t.offsets.data[d], en = t.offsets.data[d + 1];
      for (int h = 0; h < heads; ++h) {
        float mx = -INFINITY;
        for (int64_t e = b; e < en; ++e) mx = std::max(mx, score.data[e * heads + h]);
        double sum = 0;
        for (int64_t e = b; e < en; ++e) sum += std::exp(score.data[e * heads + h] - mx);
        for (int64_t e = b; e < en; ++e) {
          const float a = static_cast<float>(std::exp(score.data[e * heads + h] - mx) / sum);
          alpha.data[e * heads + h] = a;
          alpha_drop.data[e * heads + h] = a * attn_scale(attn, h, t.edge_src_key.data[e], t.edge_dst_key.data[e]);
        }
      }
    }
  });
}

void CpuDevice::gat_aggregate(const DevTopology& t, DevMat g, DevArray<float> alpha_drop, int heads, bool mean,
                              DevMat out) {
  enqueue([=, this] {
    const int64_t f = g.cols / heads;
  #pragma omp parallel for schedule(dynamic, 64)
    for (int64_t d = 0; d < t.num_dst; ++d) {
      float* o = out.row(d);
      std::fill(o, o + out.cols, 0.0f);
      for (int64_t e = t.offsets.data[d]; e < t.offsets.data[d + 1]; ++e) {
        const float* gs = g.row(t.src.data[e]);
        for (int h = 0; h < heads; ++h) {
          const float a = alpha_drop.data[e * heads + h] * (mean ? 1.0f / heads : 1.0f);
          float* oh = mean ? o : o + h * f;
          for (int64_t j = 0; j < f; ++j) oh[j] += a * gs[h * f + j];
        }
      }
    }
  });
}

void CpuDevice::gat_backward(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst,
                             int heads, float slope, bool mean, DevArray<float> pre, DevArray<float> alpha,
                             DevArray<float> alpha_drop, const DropoutSpec& attn, DevMat dout, DevMat dg,
                             DevArray<float> d_att_src, DevArray<float> d_att_dst) {
  enqueue([=, this] {
    const int64_t f = g.cols / heads;
    const int64_t ne = t.num_edges;
    // dO[d][h][j]: gradient of head h's aggregate.
    auto d_out = [&](int64_t d, int h, int64_t j) {
      return mean ? dout.row(d)[j] / static_cast<float>(heads) : dout.row(d)[h * f + j];
    };
    // Per edge and head: gradient of the pre-activation score.
    std::vector<float> dpre(static_cast<size_t>(ne * heads));
  #pragma omp parallel for schedule(dynamic, 64)
    for (int64_t d = 0; d < t.num_dst; ++d) {
      const int64_t b = t.offsets.data[d], en = t.offsets.data[d + 1];
      for (int h = 0; h < heads; ++h) {
        double dot = 0;  // Σ_e alpha * dalpha
        for (int64_t e = b; e < en; ++e) {
          const float* gs = g.row(t.src.data[e]);
          float da_drop = 0;
          for (int64_t j = 0; j < f; ++j) da_drop += d_out(d, h, j) * gs[h * f + j];
          const float da = da_drop * attn_scale(attn, h, t.edge_src_key.data[e], t.edge_dst_key.data[e]);
          dpre[e * heads + h] = da;  // temporarily dalpha
          dot += static_cast<double>(alpha.data[e * heads + h]) * da;
        }
        for (int64_t e = b; e < en; ++e) {
          const float ds = alpha.data[e * heads + h] * (dpre[e * heads + h] - static_cast<float>(dot));
          dpre[e * heads + h] = ds * (pre.data[e * heads + h] > 0 ? 1.0f : slope);
        }
      }
    }
    // dg by source rows: aggregation term + att_src term.
  #pragma omp parallel for schedule(dynamic, 64)
    for (int64_t r = 0; r < t.num_src_rows; ++r) {
      float* o = dg.row(r);
      std::fill(o, o + dg.cols, 0.0f);
      for (int64_t k = t.t_offsets.data[r]; k < t.t_offsets.data[r + 1]; ++k) {
        const uint32_t e = t.t_edge.data[k];
        const int64_t d = t.edge_dst.data[e];
        for (int h = 0; h < heads; ++h) {
          const float a = alpha_drop.data[e * heads + h], dp = dpre[e * heads + h];
          for (int64_t j = 0; j < f; ++j) o[h * f + j] += a * d_out(d, h, j) + dp * att_src.data[h * f + j];
        }
      }
    }
    // dg of destination rows: att_dst term (each destination row is distinct).
  #pragma omp parallel for schedule(dynamic, 64)
    for (int64_t d = 0; d < t.num_dst; ++d) {
      float* o = dg.row(t.dst_row.data[d]);
      for (int64_t e = t.offsets.data[d]; e < t.offsets.data[d + 1]; ++e)
        for (int h = 0; h < heads; ++h)
          for (int64_t j = 0; j < f; ++j) o[h * f + j] += dpre[e * heads + h] * att_dst.data[h * f + j];
    }
    // Attention vector gradients (sequential: deterministic and small).
    for (int64_t d = 0; d < t.num_dst; ++d) {
      const float* gd = g.row(t.dst_row.data[d]);
      for (int64_t e = t.offsets.data[d]; e < t.offsets.data[d + 1]; ++e) {
        const float* gs = g.row(t.src.data[e]);
        for (int h = 0; h < heads; ++h) {
          const float dp = dpre[e * heads + h];
          for (int64_t j = 0; j < f; ++j) {
            d_att_src.data[h * f + j] += dp * gs[h * f + j];
            d_att_dst.data[h * f + j] += dp * gd[h * f + j];
          }
        }
      }
    }
  });
}

namespace {
void add_loss(DevMat logits, DevArray<int32_t> labels, DevArray<uint8_t> split, int64_t first_vertex, float scale,
              DevMat dlogits, LossStats& st);
}  // namespace

void CpuDevice::softmax_xent(DevMat logits, DevArray<int32_t> labels, DevArray<uint8_t> split, int64_t first_vertex,
                             float scale, DevMat dlogits) {
  enqueue([=, this] { add_loss(logits, labels, split, first_vertex, scale, dlogits, loss_); });
}

LossStats CpuDevice::take_loss_stats() {
  synchronize();
  LossStats st = loss_;
  loss_ = {};
  return st;
}

namespace {
void add_loss(DevMat logits, DevArray<int32_t> labels, DevArray<uint8_t> split, int64_t first_vertex, float scale,
              DevMat dlogits, LossStats& st) {
  const int64_t c = logits.cols;
  for (int64_t r = 0; r < logits.rows; ++r) {
    const int64_t v = first_vertex + r;
    const float* z = logits.row(r);
    float* dz = dlogits.data ? dlogits.row(r) : nullptr;
    const int32_t y = labels.data[v];
    const uint8_t s = split.data[v];
    const float mx = *std::max_element(z, z + c);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(static_cast<double>(z[j] - mx));
    const int64_t pred = std::max_element(z, z + c) - z;
    if (y >= 0 && s <= 3) {
      st.count[s] += 1;
      st.correct[s] += pred == y ? 1 : 0;
    }
    const bool train = y >= 0 && s == 1;
    if (train) st.loss_sum += -(static_cast<double>(z[y] - mx) - std::log(sum));
    if (dz) {
      for (int64_t j = 0; j < c; ++j) {
        const double p = std::exp(static_cast<double>(z[j] - mx)) / sum;
        dz[j] = train ? static_cast<float>((p - (j == y ? 1.0 : 0.0)) * scale) : 0.0f;
      }
    }
  }
}
}  // namespace

CpuExecutor::CpuExecutor(int num_devices, CopyTiming timing) {
  HT_CHECK(num_devices >= 1, "the CPU executor needs at least one (emulated) device");
  for (int i = 0; i < num_devices; ++i) devices_.push_back(std::make_unique<CpuDevice>(i, timing, unpinned_));
}

std::pair<uintptr_t, uintptr_t> UnpinnedHost::range(const HostMat& m) {
  return {reinterpret_cast<uintptr_t>(m.row_bytes(m.held_first())), reinterpret_cast<uintptr_t>(m.row_bytes(m.held_last()))};
}

void UnpinnedHost::add(const HostMat& m) {
  std::lock_guard lock(mutex_);
  ranges_.push_back(range(m));
}

void UnpinnedHost::remove(const HostMat& m) {
  const auto r = range(m);
  std::lock_guard lock(mutex_);
  std::erase(ranges_, r);
}

bool UnpinnedHost::overlaps(const HostMat& m) const {
  if (m.on_device()) return false;
  const auto [b, e] = range(m);
  std::lock_guard lock(mutex_);
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const auto& r) { return b < r.second && r.first < e; });
}

void CpuDevice::check_pinned(const HostMat& m, const char* op) const {
  HT_CHECK(!unpinned_ || !unpinned_->overlaps(m),
           "{} on host rows that are not pinned (a GPU reaches host rows only through pinned, mapped memory)", op);
}

namespace {
thread_local HostAllocTimes this_thread_times;  // Executor::host_alloc_times
}  // namespace

HostAllocTimes CpuExecutor::host_alloc_times() const { return this_thread_times; }

// The buffers are made outside the lock; only the lists are shared with the
// other allocating thread. Large ones are fresh anonymous maps (huge pages
// asked for: HostBlock), faulted in by all cores: the kernel's zero pages,
// not zeroed again (a vector's value-initialisation would write every byte
// once more, on one thread), as the CUDA executor's PinnedBuffer does.
HostMat CpuExecutor::alloc_host(int64_t rows, int64_t cols, StoreDtype dtype, bool pin) {
  const int64_t bytes = rows * cols * dtype_bytes(dtype);
  Timer pages;
  void* p = nullptr;
  std::vector<float> small;
  std::optional<HostBlock> large;
  if (static_cast<size_t>(bytes) >= bulk_tuning().huge_bytes) {
    large.emplace(static_cast<size_t>(bytes));
    prefault_pages(large->data(), large->size());
    p = large->data();
  } else {
    small.assign(static_cast<size_t>((bytes + 3) / 4), 0.0f);
    p = small.data();
  }
  this_thread_times.pages += pages.seconds();
  std::lock_guard lock(host_mutex_);
  if (large) large_host_.push_back(std::move(*large));  // (moving keeps the bytes where they are)
  else host_.push_back(std::move(small));
  host_bytes_ += bytes;
  const HostMat m{p, rows, cols, -1, dtype};
  if (!pin) unpinned_->add(m);
  return m;
}

HostMat CpuExecutor::alloc_host_rows(int64_t rows, int64_t cols, StoreDtype dtype, int64_t begin, int64_t end,
                                     bool pin) {
  const int64_t row_bytes = cols * dtype_bytes(dtype);
  Timer pages;
  RowWindow window(rows, row_bytes, begin, end);
  std::byte* p = window.base();
  this_thread_times.pages += pages.seconds();
  std::lock_guard lock(host_mutex_);
  windows_.push_back(std::move(window));
  host_bytes_ += (end - begin) * row_bytes;
  const HostMat m{p, rows, cols, -1, dtype, begin, end};
  if (!pin) unpinned_->add(m);
  return m;
}

void CpuExecutor::allreduce_sum(std::span<DevArray<float>> per_device) {
  HT_ASSERT(static_cast<int>(per_device.size()) == num_devices());
  synchronize_all();
  const int64_t n = per_device[0].size;
  // Every device's values in job order: this process's own, or with several
  // processes all of them, gathered.
  std::vector<const float*> parts;
  std::vector<float> all;
  if (multi_process()) {
    std::vector<float> mine(static_cast<size_t>(n * num_devices()));
    for (int i = 0; i < num_devices(); ++i) std::copy(per_device[i].data, per_device[i].data + n, mine.data() + i * n);
    all.resize(static_cast<size_t>(n * job_devices()));
    allgather_devices(std::as_bytes(std::span<const float>(mine)), std::as_writable_bytes(std::span<float>(all)));
    for (int k = 0; k < job_devices(); ++k) parts.push_back(all.data() + k * n);
  } else {
    for (auto& a : per_device) parts.push_back(a.data);
  }
  // Fixed order (device 0, 1, ... of the job) so the sum is deterministic
  // and the same whatever the number of processes.
  for (int64_t j = 0; j < n; ++j) {
    float s = 0;
    for (const float* p : parts) s += p[j];
    for (auto& a : per_device) a.data[j] = s;
  }
}

void CpuExecutor::exchange(std::span<const RowTransfer> group) {
  if (group.empty()) return;
  HT_CHECK(multi_process(), "an exchange with other processes in a one-process job");
  std::vector<TransportMessage> sends, recvs;
  for (const RowTransfer& t : group) {
    CpuDevice& d = *devices_.at(t.device);
    d.catch_up();
    const int self = first_device() + t.device;
    const int from = t.send ? self : t.peer, to = t.send ? t.peer : self;
    const TransportMessage msg{process_of(t.peer), from * job_devices() + to,
                               std::as_writable_bytes(std::span<float>(t.data, static_cast<size_t>(t.floats)))};
    (t.send ? sends : recvs).push_back(msg);
  }
  job().transport->exchange(sends, recvs);
}

std::byte* CpuExecutor::alloc_pinned_bytes(int64_t n) {
  std::vector<std::byte> block(static_cast<size_t>(n));
  std::byte* p = block.data();
  std::lock_guard lock(host_mutex_);
  host_bytes_pool_.push_back(std::move(block));
  return p;
}

int64_t CpuExecutor::peak_device_bytes() const {
  int64_t m = 0;
  for (const auto& d : devices_) m = std::max(m, d->allocated_bytes());
  return m;
}

}  // namespace ht
