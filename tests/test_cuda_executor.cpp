// CUDA executor against the CPU reference executor: every Device op on random
// inputs with awkward sizes (not multiples of 32 or 128, widths that break
// 16-byte vectors), and one training epoch (loss and weight gradients within
// 1e-4 relative) for GCN and GAT, m ∈ {1, 2, 4}, every comm mode. Skips
// visibly without a GPU (CI) or with fewer GPUs than a case needs.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/device_plan.hpp"
#include "engine/device_uploads.hpp"
#include "engine/host_rows.hpp"
#include "engine/spmm_backend.hpp"
#include "engine/trainer.hpp"
#include "graph/build.hpp"
#include "partition/partition.hpp"
#include "partition/plan_builder.hpp"
#include "plan_test_graphs.hpp"
#ifdef HT_HAVE_CUDA
#include "cuda/cuda_executor.hpp"
#endif

namespace ht {
namespace {

#ifdef HT_HAVE_CUDA
int gpus() { return cuda_device_count(); }
#else
int gpus() { return 0; }
#endif

#define REQUIRE_GPUS(k)                                                                                     \
  do {                                                                                                      \
    if (gpus() < (k)) GTEST_SKIP() << "needs " << (k) << " CUDA GPU(s), " << gpus() << " visible"          \
                                   << (gpus() == 0 ? " (no GPU or built without CUDA): GPU test skipped" : ""); \
  } while (0)

[[maybe_unused]] std::vector<float> random_floats(int64_t n, uint64_t seed) {
  rng::Stream r(seed, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(r.uniform() * 2 - 1);
  return v;
}

template <typename T>
[[maybe_unused]] std::vector<T> listed(DevArray<T> a) {
  return {a.data, a.data + a.size};
}

[[maybe_unused]] std::vector<float> read_all(Device& d, DevArray<float> a) {
  std::vector<float> out(a.size);
  d.read(a, out);
  return out;
}

[[maybe_unused]] double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

// A random chunk topology: nd destinations reading rows of an R-row buffer;
// every destination has a self row (dst_row) and 0..7 other edges.
// `hub_edges` > 0: destination 1 gets that many more in-edges and source
// row 2 that many more out-edges (rows longer than the kernels' one-warp limit).
[[maybe_unused]] HostTopology random_topology(int64_t nd, int64_t rows, uint64_t seed, int64_t hub_edges = 0) {
  rng::Stream r(seed, 2);
  HostTopology t;
  t.num_dst = nd;
  t.num_src_rows = rows;
  t.offsets.push_back(0);
  for (int64_t d = 0; d < nd; ++d) {
    const uint32_t self = static_cast<uint32_t>((d * 7) % rows);
    t.dst_row.push_back(self);
    t.src.push_back(self);
    t.edge_dst.push_back(static_cast<uint32_t>(d));
    const int64_t k = static_cast<int64_t>(r.below(8)) + (d == 1 ? hub_edges : 0);
    for (int64_t i = 0; i < k; ++i) {
      t.src.push_back(static_cast<uint32_t>(r.below(rows)));
      t.edge_dst.push_back(static_cast<uint32_t>(d));
    }
    for (int64_t i = 0; i < (hub_edges > 0 ? hub_edges / nd + 1 : 0); ++i) {
      t.src.push_back(2);
      t.edge_dst.push_back(static_cast<uint32_t>(d));
    }
    t.offsets.push_back(static_cast<int64_t>(t.src.size()));
  }
  const int64_t ne = static_cast<int64_t>(t.src.size());
  for (int64_t e = 0; e < ne; ++e) {
    t.weight.push_back(static_cast<float>(0.1 + r.uniform()));
    t.src_key.push_back(static_cast<int64_t>(t.src[e]) * 3 + 1);
    t.dst_key.push_back(static_cast<int64_t>(t.edge_dst[e]) * 5 + 2);
  }
  t.t_offsets.assign(rows + 1, 0);
  for (int64_t e = 0; e < ne; ++e) ++t.t_offsets[t.src[e] + 1];
  std::partial_sum(t.t_offsets.begin(), t.t_offsets.end(), t.t_offsets.begin());
  std::vector<int64_t> pos(t.t_offsets.begin(), t.t_offsets.end() - 1);
  t.t_edge.resize(ne);
  for (int64_t e = 0; e < ne; ++e) t.t_edge[pos[t.src[e]]++] = static_cast<uint32_t>(e);
  return t;
}

#ifdef HT_HAVE_CUDA
// Runs `body` on a CPU device and on GPU 0 with identical inputs.
struct Pair {
  std::unique_ptr<Executor> cpu = std::make_unique<CpuExecutor>(1);
  std::unique_ptr<Executor> gpu = make_cuda_executor(1);
  Device& c() { return cpu->device(0); }
  Device& g() { return gpu->device(0); }
};
#endif

}  // namespace

// Every path between the vertex store and a device, for each store dtype:
// fp32 within 1e-6, 16-bit stores bit-for-bit (the GPU rounds as the CPU
// executor does: core/half.hpp).
TEST(CudaKernels, GatherCopyFlushMatchCpu) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  for (StoreDtype t : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16})
  for (int64_t cols : {1, 3, 37, 64, 129, 256}) {
    SCOPED_TRACE(::testing::Message() << dtype_name(t) << " cols " << cols);
    Pair p;
    const int64_t n = 301, rows = 173;
    HostMat hc = p.cpu->alloc_host(n, cols, t), hg = p.gpu->alloc_host(n, cols, t);
    auto src = random_floats(n * cols, cols);
    p.cpu->store_fill(hc, src);
    p.gpu->store_fill(hg, src);
    std::vector<uint32_t> sr, dr;
    for (uint32_t k = 0; k < 150; ++k) {
      sr.push_back((k * 37 + 11) % n);
      dr.push_back((k * 13) % rows);
    }
    std::sort(dr.begin(), dr.end());
    dr.erase(std::unique(dr.begin(), dr.end()), dr.end());
    sr.resize(dr.size());
    std::vector<int64_t> keys(n);
    std::iota(keys.begin(), keys.end(), 1000);
    for (Device* d : {&p.c(), &p.g()}) {
      const HostMat& host = d == &p.c() ? hc : hg;
      DevMat m = d->alloc_mat(rows, cols);
      DropoutSpec drop{true, 0.4f, 9, 2, 1, d->upload(std::span<const int64_t>(keys)).data};
      d->gather_from_host(host, d->upload(std::span<const uint32_t>(sr)), d->upload(std::span<const uint32_t>(dr)), m,
                          drop);
      d->copy_from_host(host, 5, 20, m, 100);
      // Flush half the gathered rows back into the host buffer, then copy
      // the whole device buffer over the first rows: both paths land in host.
      std::vector<uint32_t> fr(dr.begin(), dr.begin() + dr.size() / 2), fv(sr.begin(), sr.begin() + sr.size() / 2);
      // The return path of the trainer: compact on the device, copy on the
      // store queue, add on the host.
      DevMat staged = d->alloc_mat(static_cast<int64_t>(fr.size()), cols);
      d->compact_and_zero(m, d->upload(std::span<const uint32_t>(fr)), staged);
      HostMat pinned = (d == &p.c() ? p.cpu : p.gpu)->alloc_host(staged.rows, cols, t);
      // The store queue reads `staged` only after the compute queue wrote it
      // (without this wait, compute-sanitizer's slow kernels lose the race).
      const Event compacted = d->create_event();
      d->record(compacted);
      d->use(Queue::store);
      d->wait(*d, compacted);
      d->copy_to_host(staged, 0, staged.rows, pinned, 0);
      d->use(Queue::compute);
      d->synchronize();
      for (size_t k = 0; k < fv.size(); ++k) add_row(host, fv[k], pinned, static_cast<int64_t>(k));
      // First returns: written (rounded) by the device straight into host rows.
      std::vector<uint32_t> back(fr.begin(), fr.begin() + fr.size() / 2), to(back.size());
      for (size_t k = 0; k < to.size(); ++k) to[k] = static_cast<uint32_t>(n - 1 - k);
      d->scatter_rows_and_zero(m, d->upload(std::span<const uint32_t>(back)), d->upload(std::span<const uint32_t>(to)),
                               host);
      d->copy_to_host(m, 0, rows, host, 0);
      d->synchronize();
    }
    if (t == StoreDtype::f32) {
      std::vector<float> a(hg.f32(), hg.f32() + n * cols), b(hc.f32(), hc.f32() + n * cols);
      EXPECT_LT(rel_err(a, b), 1e-6);
    } else {
      EXPECT_EQ(std::memcmp(hg.data, hc.data, static_cast<size_t>(hc.bytes())), 0);
    }
  }
#endif
}

// Narrowing and widening of values across fp16's whole range (subnormals,
// ties, overflow to Inf) and bf16's: GPU and CPU store the same bits, with
// the GPU converting in zero-copy kernels or in device memory.
TEST(CudaKernels, SixteenBitRoundingMatchesCpu) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  std::vector<float> v;
  rng::Stream r(5, 3);
  for (int i = 0; i < 20000; ++i) v.push_back(static_cast<float>((r.uniform() * 2 - 1) * std::exp2(r.uniform() * 60 - 40)));
  for (float x : {0.f, -0.f, 65504.f, 65519.f, 65520.f, 1e6f, 5.96e-8f, 2.98e-8f, 3e-8f, 6.1e-5f, 1.f + 1.f / 2048}) {
    v.push_back(x);
    v.push_back(-x);
  }
  while (v.size() % 64) v.push_back(1.f);
  const int64_t cols = 64, n = static_cast<int64_t>(v.size()) / cols;
  for (StoreDtype t : {StoreDtype::bf16, StoreDtype::f16})
  for (bool staged : {false, true}) {  // zero-copy kernels, or conversions in device memory + byte copies
    SCOPED_TRACE(::testing::Message() << dtype_name(t) << (staged ? " staged" : " zero-copy"));
    Pair p;
    HostMat hc = p.cpu->alloc_host(n, cols, t), hg = p.gpu->alloc_host(n, cols, t);
    std::vector<float> back_c(v.size()), back_g(v.size());
    for (Device* d : {&p.c(), &p.g()}) {
      const HostMat& host = d == &p.c() ? hc : hg;
      DevMat m = d->alloc_mat(n, cols);
      d->write(DevArray<float>{m.data, n * cols}, v);
      if (staged) {  // the trainer's path for 16-bit stores
        const DevArray<std::byte> raw = d->alloc_bytes(host.bytes());
        d->narrow_rows(m, t, raw);
        d->copy_bytes_out(raw, static_cast<std::byte*>(host.data), host.bytes());
        d->zero(m, 0, n);
        d->zero(DevArray<float>{reinterpret_cast<float*>(raw.data), host.bytes() / 4});
        d->copy_bytes_in(static_cast<const std::byte*>(host.data), raw, host.bytes());
        d->widen_rows(raw, t, m);
      } else {
        d->copy_to_host(m, 0, n, host, 0);  // narrow
        d->zero(m, 0, n);
        d->copy_from_host(host, 0, n, m, 0);  // widen
      }
      d->synchronize();
      d->read(DevArray<float>{m.data, n * cols}, d == &p.c() ? back_c : back_g);
    }
    EXPECT_EQ(std::memcmp(hg.data, hc.data, static_cast<size_t>(hc.bytes())), 0);
    EXPECT_EQ(std::memcmp(back_g.data(), back_c.data(), back_c.size() * 4), 0);
  }
#endif
}

// A 16-bit matrix in device memory takes returns as the host adds a staged
// piece (the GPU cache's row tier, TrainerOptions::tier_returns): written
// rows rounded once, added rows rounded in the piece, summed in fp32 and
// rounded once — the same bits on the GPU as on the CPU executor, and the
// source rows zeroed.
TEST(CudaKernels, SixteenBitReturnsIntoDeviceRowsMatchCpu) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  const int64_t rows = 300, cols = 37, slots = 120;
  const std::vector<float> g0 = random_floats(rows * cols, 11), g1 = random_floats(rows * cols, 12);
  std::vector<uint32_t> src, dst;  // 90 distinct buffer rows into 90 distinct slots
  for (uint32_t k = 0; k < 90; ++k) {
    src.push_back((k * 7 + 3) % rows);
    dst.push_back((k * 13 + 5) % slots);
  }
  for (StoreDtype t : {StoreDtype::bf16, StoreDtype::f16}) {
    SCOPED_TRACE(dtype_name(t));
    Pair p;
    std::vector<std::vector<std::byte>> out;
    std::vector<std::vector<float>> left;
    for (Device* d : {&p.c(), &p.g()}) {
      DevMat G = d->alloc_mat(rows, cols);
      const DevArray<std::byte> tier = d->alloc_bytes(slots * cols * dtype_bytes(t) + 4);
      const HostMat T{tier.data, slots, cols, d->index(), t};
      d->zero(DevArray<float>{reinterpret_cast<float*>(tier.data), tier.size / 4});
      const DevIdx s = d->upload(std::span<const uint32_t>(src)), r = d->upload(std::span<const uint32_t>(dst));
      d->write(DevArray<float>{G.data, rows * cols}, g0);
      d->scatter_rows_and_zero(G, s, r, T);  // first returns: written
      d->write(DevArray<float>{G.data, rows * cols}, g1);
      d->add_rows_and_zero(G, s.sub(0, 60), r.sub(0, 60), T);  // later returns: added
      d->synchronize();
      std::vector<float> g(static_cast<size_t>(rows * cols)), bytes_f(static_cast<size_t>(tier.size / 4));
      d->read(DevArray<float>{G.data, rows * cols}, g);
      d->read(DevArray<float>{reinterpret_cast<float*>(tier.data), tier.size / 4}, bytes_f);
      std::vector<std::byte> b(static_cast<size_t>(slots * cols * dtype_bytes(t)));
      std::memcpy(b.data(), bytes_f.data(), b.size());
      out.push_back(std::move(b));
      left.push_back(std::move(g));
    }
    EXPECT_EQ(out[0], out[1]);
    EXPECT_EQ(left[0], left[1]);
    for (uint32_t k = 0; k < 60; ++k)  // added rows are zero in G afterwards
      EXPECT_EQ(left[1][static_cast<size_t>(src[k]) * cols], 0.0f);
  }
#endif
}

TEST(CudaKernels, DenseAndSparseOpsMatchCpu) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  // Widths: float rows (45), each float4 kernel (64, 260, 1024), and the
  // fallback beyond the float kernels (261).
  for (int64_t cols : {45, 64, 260, 261, 1024}) {
  SCOPED_TRACE(cols);
  Pair p;
  const int64_t nd = 97, rows = 131, out = 19;
  const HostTopology ht = random_topology(nd, rows, 3);
  std::vector<std::vector<float>> results[2];
  int side = 0;
  for (Device* d : {&p.c(), &p.g()}) {
    auto& res = results[side++];
    DevTopology t = upload_topology(*d, ht);
    DevArray<float> x = d->upload(std::span<const float>(random_floats(rows * cols, 1)));
    DevArray<float> w = d->upload(std::span<const float>(random_floats(cols * out, 2)));
    DevArray<float> bias = d->upload(std::span<const float>(random_floats(out, 3)));
    DevArray<float> a = d->alloc_floats(nd * cols), z = d->alloc_floats(nd * out), h = d->alloc_floats(nd * out);
    DevArray<float> dz = d->alloc_floats(nd * out), dw = d->alloc_floats(cols * out), db = d->alloc_floats(out);
    DevArray<float> dx = d->alloc_floats(rows * cols);
    DevArray<float> wt = d->alloc_floats(out * cols);
    d->spmm(t, {x.data, rows, cols}, {a.data, nd, cols});
    d->gemm(false, false, nd, out, cols, 1.f, a.data, cols, w.data, out, 0.f, z.data, out);
    d->bias_act({z.data, nd, out}, bias, Act::elu, {h.data, nd, out});
    d->act_backward({h.data, nd, out}, {z.data, nd, out}, Act::relu, {dz.data, nd, out});
    d->gemm(true, false, cols, out, nd, 1.f, a.data, cols, dz.data, out, 1.f, dw.data, out);
    d->gemm(true, false, out, out, cols, 0.5f, w.data, out, w.data, out, 0.f, wt.data, out);  // 0.5 W^T W
    d->col_sum_add({dz.data, nd, out}, db);
    d->gemm(false, true, nd, cols, out, 1.f, dz.data, out, w.data, out, 0.f, a.data, cols);
    d->spmm_transpose_add(t, {a.data, nd, cols}, {dx.data, rows, cols});
    std::vector<int64_t> keys(nd + 10);
    std::iota(keys.begin(), keys.end(), 7);
    DropoutSpec drop{true, 0.3f, 4, 1, 2, d->upload(std::span<const int64_t>(keys)).data};
    d->dropout_rows({h.data, nd, out}, 3, drop);
    d->synchronize();
    for (auto arr : {a, z, h, dz, dw, db, dx, wt}) res.push_back(read_all(*d, arr));
  }
  const char* names[] = {"dA", "z", "h(dropout)", "dz", "dW", "db", "dx", "gemm TN"};
  for (size_t k = 0; k < results[0].size(); ++k) EXPECT_LT(rel_err(results[1][k], results[0][k]), 1e-5) << names[k];
  }
#endif
}

// Rows with more edges than one warp takes (a destination with 20,000
// in-edges, a source row with 20,000 out-edges) are summed in segments of a
// block each, then added in segment order: same results as the CPU, and the
// same bits every run.
TEST(CudaKernels, LongRowsMatchCpuSameBitsEveryRun) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  for (int64_t cols : {1, 47, 64, 260, 1024}) {  // float rows (1, 47), float4 rows
    SCOPED_TRACE(cols);
    Pair p;
    const int64_t nd = 40, rows = 5000;
    const HostTopology ht = random_topology(nd, rows, 5, 20000);
    std::vector<std::vector<float>> results[3];
    int side = 0;
    for (Device* d : {&p.c(), &p.g(), &p.g()}) {
      auto& res = results[side++];
      DevTopology t = upload_topology(*d, ht);
      DevArray<float> x = d->upload(std::span<const float>(random_floats(rows * cols, 1)));
      DevArray<float> dout = d->upload(std::span<const float>(random_floats(nd * cols, 2)));
      DevArray<float> a = d->alloc_floats(nd * cols);
      DevArray<float> dx = d->upload(std::span<const float>(random_floats(rows * cols, 3)));
      d->spmm(t, {x.data, rows, cols}, {a.data, nd, cols});
      d->spmm_transpose_add(t, {dout.data, nd, cols}, {dx.data, rows, cols});
      d->synchronize();
      res.push_back(read_all(*d, a));
      res.push_back(read_all(*d, dx));
    }
    for (int k = 0; k < 2; ++k) {
      EXPECT_LT(rel_err(results[1][k], results[0][k]), 1e-4) << (k ? "transpose" : "spmm");  // 20,000-term sums in another order
      EXPECT_TRUE(results[1][k] == results[2][k]) << (k ? "transpose" : "spmm") << ": two GPU runs differ";
    }
  }
#endif
}

// Column sums (bias gradients) over many row blocks give the same bits every
// run: partial sums added in block order, no atomics (with one atomic per
// block, whole GPU runs differed in their last bits from run to run).
TEST(CudaKernels, ColumnSumsSameBitsEveryRun) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  std::unique_ptr<Executor> gpu = make_cuda_executor(1);
  Device& d = gpu->device(0);
  const int64_t rows = 300000, cols = 47;
  DevArray<float> m = d.upload(std::span<const float>(random_floats(rows * cols, 9)));
  std::vector<std::vector<float>> sums;
  for (int run = 0; run < 4; ++run) {
    DevArray<float> g = d.alloc_floats(cols);
    d.zero(g);
    d.col_sum_add({m.data, rows, cols}, g);
    std::vector<float> host(static_cast<size_t>(cols));
    d.read(g, host);
    sums.push_back(host);
  }
  for (int run = 1; run < 4; ++run) EXPECT_EQ(std::memcmp(sums[0].data(), sums[run].data(), cols * 4), 0) << run;
#endif
}

// upload_bytes (resident steps from ordinary memory, through two pinned
// staging pieces of 16 MiB): the same bytes on the device for a block of one
// word, of exactly one piece and of several pieces and a part, the source
// overwritten as soon as the call returns (it may be freed then), twice in a
// row (the pieces reused after their copies left).
TEST(CudaKernels, UploadBytesFromPageableMemory) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  std::unique_ptr<Executor> gpu = make_cuda_executor(1);
  Device& d = gpu->device(0);
  d.use(Queue::compute);
  for (int64_t words : {int64_t{1}, int64_t{4} << 20, (int64_t{10} << 20) + 3}) {
    std::vector<std::vector<float>> sent;
    std::vector<DevArray<std::byte>> at;
    for (int k = 0; k < 2; ++k) {
      std::vector<float> src = random_floats(words, 20 + k);
      sent.push_back(src);
      at.push_back(d.alloc_bytes(4 * words));
      d.upload_bytes(std::as_bytes(std::span<const float>(src)), at.back());
      std::fill(src.begin(), src.end(), -7.0f);  // the call has read it
    }
    for (int k = 0; k < 2; ++k) {
      const std::vector<float> back = read_all(d, {reinterpret_cast<float*>(at[k].data), words});
      EXPECT_EQ(std::memcmp(back.data(), sent[k].data(), 4 * words), 0) << words << " words, upload " << k;
    }
  }
#endif
}

// upload_on_devices (the GPU cache's whole matrices from unpinned memory,
// the resident steps): every GPU's uploads at once, a thread per GPU, each
// through its own staging pieces: the same bytes on each GPU as sent, for
// blocks of several pieces and a part, the sources overwritten once it
// returns.
TEST(CudaKernels, UploadBytesToSeveralGpusAtOnce) {
  REQUIRE_GPUS(2);
#ifdef HT_HAVE_CUDA
  const int m = std::min(gpus(), 4);
  std::unique_ptr<Executor> gpu = make_cuda_executor(m);
  std::vector<std::vector<ByteUpload>> uploads(static_cast<size_t>(m));
  std::vector<std::vector<float>> sources, sent;
  std::vector<DevArray<std::byte>> at;
  for (int i = 0; i < m; ++i)
    for (int64_t words : {(int64_t{10} << 20) + 3, int64_t{5}}) {
      sources.push_back(random_floats(words + i, 40 + static_cast<int>(sources.size())));
      sent.push_back(sources.back());
      at.push_back(gpu->device(i).alloc_bytes(4 * (words + i)));
    }
  for (size_t k = 0; k < sources.size(); ++k)
    uploads[k / 2].push_back({std::as_bytes(std::span<const float>(sources[k])), at[k]});
  upload_on_devices(*gpu, uploads);
  for (auto& v : sources) std::fill(v.begin(), v.end(), -7.0f);
  for (size_t k = 0; k < sources.size(); ++k) {
    Device& d = gpu->device(static_cast<int>(k / 2));
    const std::vector<float> back =
        read_all(d, {reinterpret_cast<float*>(at[k].data), static_cast<int64_t>(sent[k].size())});
    EXPECT_EQ(std::memcmp(back.data(), sent[k].data(), 4 * sent[k].size()), 0) << "GPU " << k / 2 << ", upload " << k % 2;
  }
#endif
}

// A large host buffer allocated unpinned (the GPU cache's whole matrices:
// Trainer::deferred_pins): faulted in and zeroed, not pinned; upload_bytes
// takes it as it is; pin_host registers it, after which copies and mapped
// gathers read it; pin_host again is nothing. Small buffers are pinned
// whatever was asked (cudaHostAlloc).
TEST(CudaKernels, UnpinnedHostBufferPinnedLater) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  std::unique_ptr<Executor> gpu = make_cuda_executor(1);
  Device& d = gpu->device(0);
  d.use(Queue::compute);
  const int64_t rows = (int64_t{80} << 20) / (4 * 33), cols = 33;  // 80 MiB: an anonymous map
  const HostMat m = gpu->alloc_host(rows, cols, StoreDtype::f32, false);
  EXPECT_FALSE(gpu->host_pinned(m));
  const std::vector<float> v = random_floats(rows * cols, 31);
  std::memcpy(m.data, v.data(), v.size() * 4);
  const DevArray<std::byte> at = d.alloc_bytes(m.bytes());
  d.upload_bytes(std::span<const std::byte>(static_cast<const std::byte*>(m.data), static_cast<size_t>(m.bytes())), at);
  EXPECT_EQ(read_all(d, {reinterpret_cast<float*>(at.data), rows * cols}), v);
  gpu->pin_host(m);
  EXPECT_TRUE(gpu->host_pinned(m));
  gpu->pin_host(m);
  const DevMat x = d.alloc_mat(rows, cols);
  d.gather_from_host(m, DevIdx{nullptr, rows}, DevIdx{nullptr, rows}, x, DropoutSpec{});
  EXPECT_EQ(read_all(d, {x.data, rows * cols}), v);
  const HostMat small = gpu->alloc_host(3, 5, StoreDtype::f32, false);
  EXPECT_TRUE(gpu->host_pinned(small));
#endif
}

// GAT's ops against the CPU: heads concatenated or averaged, head widths that
// are not (11) and are (16, 24) multiples of 4, one head averaged (a sparse
// product like concatenation), and a hub of 20,000 in- and out-edges (its
// softmax, backward sums and aggregation in a block or in segments); each
// configuration run twice on the GPU, the same bits.
TEST(CudaKernels, GatOpsMatchCpu) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  struct Config {
    bool mean;
    int64_t heads, f, hub;
  };
  for (const Config c : {Config{false, 3, 11, 0}, Config{true, 3, 11, 0}, Config{false, 2, 16, 0},
                         Config{true, 1, 24, 0}, Config{false, 4, 16, 20000}, Config{true, 2, 12, 20000}}) {
    SCOPED_TRACE(::testing::Message() << (c.mean ? "mean" : "concat") << " heads " << c.heads << " f " << c.f
                                      << " hub " << c.hub);
    Pair p;
    const int64_t nd = c.hub ? 40 : 83, rows = c.hub ? 5000 : 117, heads = c.heads, f = c.f, gcols = heads * f;
    const int64_t ocols = c.mean ? f : gcols;
    const HostTopology ht = random_topology(nd, rows, 5, c.hub);
    const int64_t ne = static_cast<int64_t>(ht.src.size());
    std::vector<std::vector<float>> results[3];
    int side = 0;
    for (Device* d : {&p.c(), &p.g(), &p.g()}) {
      auto& res = results[side++];
      DevTopology t = upload_topology(*d, ht);
      d->reserve(d->gat_scratch(ne, rows, static_cast<int>(heads), gcols) + d->spmm_scratch(ne / kLongRowEdges + 2, gcols));
      DevArray<float> g = d->upload(std::span<const float>(random_floats(rows * gcols, 8)));
      DevArray<float> as = d->upload(std::span<const float>(random_floats(gcols, 9)));
      DevArray<float> ad = d->upload(std::span<const float>(random_floats(gcols, 10)));
      DevArray<float> dout = d->upload(std::span<const float>(random_floats(nd * ocols, 11)));
      DevArray<float> pre = d->alloc_floats(ne * heads), score = d->alloc_floats(ne * heads);
      DevArray<float> alpha = d->alloc_floats(ne * heads), adrop = d->alloc_floats(ne * heads);
      DevArray<float> o = d->alloc_floats(nd * ocols), dg = d->alloc_floats(rows * gcols);
      DevArray<float> das = d->alloc_floats(gcols), dad = d->alloc_floats(gcols);
      DropoutSpec attn{true, 0.25f, 3, 4, 1, nullptr};
      d->gat_scores(t, {g.data, rows, gcols}, as, ad, static_cast<int>(heads), 0.2f, pre, score);
      d->gat_softmax(t, static_cast<int>(heads), score, alpha, adrop, attn);
      d->gat_aggregate(t, {g.data, rows, gcols}, adrop, static_cast<int>(heads), c.mean, {o.data, nd, ocols});
      d->gat_backward(t, {g.data, rows, gcols}, as, ad, static_cast<int>(heads), 0.2f, c.mean, pre, alpha, adrop, attn,
                      {dout.data, nd, ocols}, {dg.data, rows, gcols}, das, dad);
      d->synchronize();
      for (auto arr : {score, alpha, adrop, o, dg, das, dad}) res.push_back(read_all(*d, arr));
    }
    const char* names[] = {"score", "alpha", "alpha_drop", "out", "dg", "d_att_src", "d_att_dst"};
    const double tol = c.hub ? 1e-4 : 1e-5;  // 20,000-term sums in another order
    for (size_t k = 0; k < results[0].size(); ++k) {
      EXPECT_LT(rel_err(results[1][k], results[0][k]), tol) << names[k];
      EXPECT_TRUE(results[1][k] == results[2][k]) << names[k] << ": two GPU runs differ";
    }
  }
#endif
}

TEST(CudaKernels, SoftmaxCrossEntropyMatchesCpu) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Pair p;
  const int64_t n = 211, c = 13;
  rng::Stream r(4, 4);
  std::vector<int32_t> labels(n);
  std::vector<uint8_t> split(n);
  for (int64_t v = 0; v < n; ++v) {
    labels[v] = v % 17 == 0 ? -1 : static_cast<int32_t>(r.below(c));
    split[v] = static_cast<uint8_t>(r.below(4));
  }
  LossStats st[2];
  std::vector<float> grads[2];
  int side = 0;
  for (Device* d : {&p.c(), &p.g()}) {
    DevArray<float> z = d->upload(std::span<const float>(random_floats((n - 5) * c, 12)));
    DevArray<float> dz = d->alloc_floats((n - 5) * c);
    d->softmax_xent({z.data, n - 5, c}, d->upload(std::span<const int32_t>(labels)),
                    d->upload(std::span<const uint8_t>(split)), 5, 0.01f, {dz.data, n - 5, c});
    st[side] = d->take_loss_stats();
    grads[side++] = read_all(*d, dz);
  }
  EXPECT_NEAR(st[1].loss_sum, st[0].loss_sum, 1e-4 * std::abs(st[0].loss_sum));
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(st[1].correct[k], st[0].correct[k]);
    EXPECT_EQ(st[1].count[k], st[0].count[k]);
  }
  EXPECT_LT(rel_err(grads[1], grads[0]), 1e-5);
#endif
}

TEST(CudaKernels, PeerPullAndPushMatchCpu) {
  REQUIRE_GPUS(2);
#ifdef HT_HAVE_CUDA
  auto gpu = make_cuda_executor(2);
  CpuExecutor cpu(2);
  // 37: float rows; 64: float4 rows (the kernels' two paths).
  for (const int64_t cols : {int64_t{37}, int64_t{64}}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 150;
    std::vector<uint32_t> peer_rows;
    for (uint32_t k = 0; k < 60; ++k) peer_rows.push_back((k * 7) % rows);
    std::sort(peer_rows.begin(), peer_rows.end());
    peer_rows.erase(std::unique(peer_rows.begin(), peer_rows.end()), peer_rows.end());
    std::vector<float> out[2];
    int side = 0;
    for (Executor* ex : {static_cast<Executor*>(&cpu), gpu.get()}) {
      Device& a = ex->device(0);
      Device& b = ex->device(1);
      DevArray<float> xb = b.upload(std::span<const float>(random_floats(rows * cols, 20)));
      DevArray<float> xa = a.alloc_floats(rows * cols);
      DevIdx idx = a.upload(std::span<const uint32_t>(peer_rows));
      a.pull_from_peer(b, {xb.data, rows, cols}, idx, {xa.data, rows, cols}, 10);
      a.synchronize();
      a.push_add_to_peer({xa.data, rows, cols}, 10, b, {xb.data, rows, cols}, idx);
      a.synchronize();
      // Early pulls (Queue::peer): b packs rows into scattered places (index
      // lists on a), then copies them to a on the copy engines.
      std::vector<uint32_t> dst_rows(peer_rows.size());
      for (size_t k = 0; k < dst_rows.size(); ++k) dst_rows[k] = static_cast<uint32_t>(rows - 1 - 2 * k);
      DevIdx didx = a.upload(std::span<const uint32_t>(dst_rows));
      DevArray<float> packed = b.alloc_floats(rows * cols);
      b.use(Queue::peer);
      b.gather_rows({xb.data, rows, cols}, idx, {packed.data, rows, cols}, didx);
      b.copy_to_peer({packed.data, rows, cols}, a, {xa.data, rows, cols});
      b.use(Queue::compute);
      b.synchronize();
      out[side] = read_all(b, xb);
      const std::vector<float> pulled = read_all(a, xa);
      out[side].insert(out[side].end(), pulled.begin(), pulled.end());
      ++side;
    }
    EXPECT_EQ(out[1], out[0]);  // copies, and one add into each row: the same bits
  }
#endif
}

namespace {

// A random graph of n vertices and m edges, f features, 5 classes; with
// `hub`, vertex 3 also has edges from and to the first `hub` vertices.
[[maybe_unused]] Graph epoch_graph(int64_t n = 300, int64_t m = 2500, int f = 37, int64_t hub = 0) {
  rng::Stream r(31, 0);
  EdgeList el;
  el.num_vertices = n;
  for (int64_t e = 0; e < m; ++e) {
    el.src.push_back(static_cast<vid_t>(r.below(n)));
    el.dst.push_back(static_cast<vid_t>(r.below(n)));
  }
  for (int64_t v = 0; v < hub; ++v) {
    el.src.insert(el.src.end(), {static_cast<vid_t>(v), 3});
    el.dst.insert(el.dst.end(), {3, static_cast<vid_t>(v)});
  }
  Graph g = csc_from_edges(std::move(el));
  g.feature_dim = f;
  g.features = random_floats(n * f, 77);
  g.num_classes = 5;
  for (int64_t v = 0; v < n; ++v) {
    g.labels.push_back(static_cast<int32_t>(r.below(5)));
    g.split.push_back(static_cast<uint8_t>(1 + r.below(3)));
  }
  return g;
}


}  // namespace

TEST(CudaEngine, EpochEqualsCpuExecutor) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph();
  for (ModelKind kind : {ModelKind::gcn, ModelKind::gat, ModelKind::sage}) {
    for (int m : {1, 2, 4}) {
      if (m > gpus()) {
        std::printf("[  SKIPPED ] m = %d needs %d GPUs, %d visible\n", m, m, gpus());
        continue;
      }
      for (CommMode comm : {CommMode::baseline, CommMode::p2p, CommMode::full}) {
        for (GcnOrder order : {GcnOrder::automatic, GcnOrder::aggregate_first})
        for (StoreDtype dtype : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16}) {
          if (kind != ModelKind::gcn && order != GcnOrder::automatic) continue;
          // 16-bit stores: the full mode and the default order (every copy path is in it).
          if (dtype != StoreDtype::f32 && (comm != CommMode::full || order != GcnOrder::automatic)) continue;
          // CPU and GPU sum in different orders, so a stored value may round
          // to the neighbouring 16-bit number: one ulp of the dtype at most.
          const double tol = dtype == StoreDtype::f32 ? 1e-4 : dtype == StoreDtype::f16 ? 2e-3 : 1.5e-2;
          ModelConfig cfg;
          cfg.kind = kind;
          cfg.dims = {37, 24, 5};  // GCN: both layers transform-first under auto
          cfg.heads = 3;
          cfg.dropout = 0.5f;
          cfg.attn_dropout = kind == ModelKind::gat ? 0.3f : 0.0f;
          SCOPED_TRACE(::testing::Message() << model_title(kind) << " m=" << m
                                            << " comm=" << static_cast<int>(comm) << " layers "
                                            << layer_orders(cfg, order) << " store " << dtype_name(dtype));
          Partition p = test::range_partition(g, m, 3);
          Plan plan = build_plan(g.view(), p);
          std::vector<int64_t> orig(g.num_vertices);
          std::iota(orig.begin(), orig.end(), 0);
          CpuExecutor cpu(m);
          auto gpu = make_cuda_executor(m);
          TrainerOptions opt{cfg, {}, comm, order};
          opt.host_dtype = dtype;
          opt.gpu_cache = 0;  // (the CPU executor caches only with a budget: GpuAccumulatorsEqualCpuExecutor)
          Trainer tc(cpu, g.view(), orig, plan, opt);
          Trainer tg(*gpu, g.view(), orig, plan, opt);
          const double lc = tc.compute_gradients(2), lg = tg.compute_gradients(2);
          EXPECT_NEAR(lg, lc, tol * std::abs(lc));
          for (size_t k = 0; k < tc.params().tensors.size(); ++k)
            EXPECT_LT(rel_err(tg.params().tensors[k].grad, tc.params().tensors[k].grad), tol)
                << tc.params().tensors[k].name;
        }
      }
    }
  }
#endif
}

// ht-train makes the executor on a thread of its own beside reading the
// files (issue 33) and drives it from the main thread after
// Executor::adopt_thread: the gradients are the bits of an executor made on
// the driving thread.
TEST(CudaEngine, ExecutorMadeOnAnotherThreadSameBits) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  const int m = std::min(gpus(), 2);
  Graph g = epoch_graph();
  Partition p = test::range_partition(g, m, 3);
  Plan plan = build_plan(g.view(), p);
  std::vector<int64_t> orig(g.num_vertices);
  std::iota(orig.begin(), orig.end(), 0);
  ModelConfig cfg;
  cfg.dims = {37, 24, 5};
  TrainerOptions opt{cfg, {}, CommMode::full, GcnOrder::automatic};
  auto here = make_cuda_executor(m);
  std::unique_ptr<Executor> there;
  std::thread maker([&] { there = make_cuda_executor(m); });
  maker.join();
  there->adopt_thread();
  Trainer a(*here, g.view(), orig, plan, opt);
  Trainer b(*there, g.view(), orig, plan, opt);
  EXPECT_EQ(a.compute_gradients(2), b.compute_gradients(2));
  for (size_t k = 0; k < a.params().tensors.size(); ++k)
    EXPECT_EQ(a.params().tensors[k].grad, b.params().tensors[k].grad) << a.params().tensors[k].name;
#endif
}

// The peer paths on the GPU: pulls after the owner's scatter (default), early
// pulls (packed by the owner, copied on the copy engines while the batch
// before computes) and kept remote rows (copied between the two remote areas)
// give the same bits (GCN, SAGE; GAT within float rounding), 2 and 4 GPUs, fp32
// and bf16 stores; and the CPU executor's results within float rounding.
// At m = 4 it also checks that the pushes of three pushers into one owner
// meet in a fixed order (Trainer::apply_pushes): the atomic adds alone did not.
TEST(CudaEngine, PeerPathsSameBits) {
  REQUIRE_GPUS(2);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph();
  for (ModelKind kind : {ModelKind::gcn, ModelKind::gat, ModelKind::sage})
    for (int m : {2, 4})
      for (StoreDtype dtype : {StoreDtype::f32, StoreDtype::bf16}) {
        if (m > gpus()) {
          std::printf("[  SKIPPED ] m = %d needs %d GPUs, %d visible\n", m, m, gpus());
          continue;
        }
        ModelConfig cfg;
        cfg.kind = kind;
        cfg.dims = {37, 24, 16, 5};
        cfg.heads = 3;
        cfg.dropout = 0.5f;
        cfg.attn_dropout = kind == ModelKind::gat ? 0.3f : 0.0f;
        SCOPED_TRACE(::testing::Message() << model_title(kind) << " m=" << m << " store "
                                          << dtype_name(dtype));
        Partition p = test::range_partition(g, m, 3);
        Plan plan = build_plan(g.view(), p);
        std::vector<int64_t> orig(g.num_vertices);
        std::iota(orig.begin(), orig.end(), 0);
        std::vector<std::vector<float>> first;
        double first_loss = 0;
        for (int path = 0; path < 3; ++path) {
          TrainerOptions opt{cfg, {}, CommMode::full, GcnOrder::automatic};
          opt.host_dtype = dtype;
          opt.gpu_cache = 0;
          opt.overlap_pulls = path == 1;
          opt.keep_remote_rows = path == 2 ? KeepRemoteRows::on : KeepRemoteRows::off;
          auto gpu = make_cuda_executor(m);
          Trainer tg(*gpu, g.view(), orig, plan, opt);
          const double loss = tg.compute_gradients(2);
          std::vector<std::vector<float>> grads;
          for (const ParamTensor& t : tg.params().tensors) grads.push_back(t.grad);
          if (path == 0) {
            CpuExecutor cpu(m);
            Trainer tc(cpu, g.view(), orig, plan, opt);
            const double lc = tc.compute_gradients(2);
            const double tol = dtype == StoreDtype::f32 ? 1e-4 : 1.5e-2;
            EXPECT_NEAR(loss, lc, tol * std::abs(lc));
            first = grads;
            first_loss = loss;
            continue;
          }
          if (kind == ModelKind::gat) {
            // GAT's transform runs over the step's active rows, which the
            // second remote area changes on odd steps: cuBLAS may pick another
            // kernel and reduce in another order. GCN's products do not see
            // the buffer's size. A 16-bit store rounds those differences to
            // whole bf16 steps (2^-8) in some stored rows.
            const double tol = dtype == StoreDtype::f32 ? 1e-5 : 1e-4;
            EXPECT_NEAR(loss, first_loss, 1e-6 * std::abs(first_loss)) << "path " << path;
            for (size_t k = 0; k < grads.size(); ++k)
              EXPECT_LT(rel_err(grads[k], first[k]), tol) << tg.params().tensors[k].name << " path " << path;
            continue;
          }
          EXPECT_EQ(std::memcmp(&loss, &first_loss, sizeof loss), 0) << "path " << path;
          for (size_t k = 0; k < grads.size(); ++k)
            EXPECT_EQ(std::memcmp(grads[k].data(), first[k].data(), grads[k].size() * 4), 0)
                << tg.params().tensors[k].name << " path " << path;
        }
      }
#endif
}

// Resident steps (packed in ordinary memory, uploaded once, their host blocks
// released when setup ends) and streamed ones (pinned, copied every pass):
// the same bits on the GPU, with the GPU cache's row tier taking returns
// (which uploads the resident steps again) and without the cache.
TEST(CudaEngine, ResidentStepsSameBitsAsStreamed) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph();
  for (CommMode comm : {CommMode::p2p, CommMode::full})
    for (int64_t cache : {int64_t{0}, int64_t{1} << 30}) {
      ModelConfig cfg;
      cfg.kind = ModelKind::gcn;
      cfg.dims = {37, 24, 5};
      cfg.dropout = 0.5f;
      Partition p = test::range_partition(g, 1, 3);
      Plan plan = build_plan(g.view(), p);
      std::vector<int64_t> orig(g.num_vertices);
      std::iota(orig.begin(), orig.end(), 0);
      std::vector<std::vector<float>> grads[2];
      double loss[2] = {0, 0};
      for (int resident : {0, 1}) {
        auto gpu = make_cuda_executor(1);
        TrainerOptions opt{cfg, {}, comm, GcnOrder::transform_first};
        opt.steps = resident ? StepPlacement::resident : StepPlacement::streamed;
        opt.gpu_cache = cache;
        opt.tier_rows_max = cache ? 9 : -1;
        Trainer t(*gpu, g.view(), orig, plan, opt);
        loss[resident] = t.compute_gradients(2);
        for (const ParamTensor& pt : t.params().tensors) grads[resident].push_back(pt.grad);
      }
      EXPECT_EQ(std::memcmp(&loss[0], &loss[1], sizeof(double)), 0) << "comm " << static_cast<int>(comm) << " cache " << cache;
      ASSERT_EQ(grads[0].size(), grads[1].size());
      for (size_t k = 0; k < grads[0].size(); ++k)
        EXPECT_EQ(std::memcmp(grads[0][k].data(), grads[1][k].data(), 4 * grads[0][k].size()), 0)
            << "comm " << static_cast<int>(comm) << " cache " << cache << " tensor " << k;
    }
#endif
}

// Resident steps derived on the GPU (Device::derive_topologies,
// cuda/topology_kernels.cu): from the packed part uploaded, the GPU writes
// make_topology's lists — edge destinations, self-loop rows, GCN's weights,
// SAGE's mean, GAT's edge keys, the transpose (a stable sort: each source
// row's edges ascending) and its long rows' segments — for a random graph,
// one with a hub of 7,000 edges each way, and one of 3 M edges (many blocks,
// 18-bit sort keys), the same bytes on every run.
TEST(CudaKernels, DerivedTopologyIsMakeTopologys) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  std::unique_ptr<Executor> gpu = make_cuda_executor(1);
  Device& d = gpu->device(0);
  for (int graph = 0; graph < 3; ++graph) {
    const Graph g = graph == 0   ? epoch_graph()
                    : graph == 1 ? epoch_graph(9000, 20000, 37, 7000)
                                 : test::make_graph(test::GraphKind::rmat, 200000, 3000000, 4);
    std::vector<float> inv_sqrt_deg(g.num_vertices), inv_deg(g.num_vertices);
    std::vector<int64_t> orig(g.num_vertices);
    for (int64_t v = 0; v < g.num_vertices; ++v) {
      inv_sqrt_deg[v] = 1.0f / std::sqrt(static_cast<float>(2 + v % 7));
      inv_deg[v] = 1.0f / static_cast<float>(1 + v % 5);
      orig[v] = 5 * v + 2;
    }
    const EdgeKeys gcn{inv_sqrt_deg, {}}, sage{{}, {}, inv_deg}, gat{{}, orig};
    for (const EdgeKeys* keys : {&gcn, &sage, &gat})
      for (CommMode mode : {CommMode::baseline, CommMode::full})
        for (int n : {1, 3}) {
          SCOPED_TRACE(::testing::Message() << "graph " << graph << " keys " << (keys == &gcn ? "gcn" : keys == &sage ? "sage" : "gat")
                                            << " mode " << static_cast<int>(mode) << " n " << n);
          const Plan plan = build_plan(g.view(), test::range_partition(g, 1, n));
          std::vector<std::vector<std::byte>> blocks;
          DevicePlan dp = build_device_plans(plan, 0, 1, mode, *keys, keys == &gat, [&](int, int64_t bytes) {
            blocks.emplace_back(static_cast<size_t>(bytes));
            return blocks.back().data();
          }, RemoteAreas::one, {1})[0];
          std::vector<DevArray<std::byte>> at;
          std::vector<DeriveTopology> steps;
          d.use(Queue::compute);
          for (const DeviceStep& ds : dp.steps) {
            ASSERT_TRUE(ds.derived);
            at.push_back(d.alloc_bytes(ds.block_bytes));
            for (const ByteUpload& u : packed_copies(ds, at.back())) d.upload_bytes(u.src, u.dst);
            steps.push_back(derivation_of(ds, at.back()));
          }
          const EdgeKeys vertices{keys == &sage ? std::span<const float>{} : std::span<const float>(inv_sqrt_deg), orig,
                                  keys == &sage ? std::span<const float>(inv_deg) : std::span<const float>{}};
          std::vector<std::vector<int64_t>> runs;
          std::vector<std::vector<std::byte>> first_run;
          for (int run = 0; run < 2; ++run) {
            runs.push_back(d.derive_topologies(steps, vertices));
            for (int j = 0; j < n; ++j) {
              DeviceStep ds = dp.steps[static_cast<size_t>(j)];
              ds.t_seg_row.count = ds.t_seg_edge.count = runs.back()[static_cast<size_t>(j)];
              std::vector<std::byte> back(static_cast<size_t>(ds.block_bytes));
              d.copy_bytes_out(at[static_cast<size_t>(j)], back.data(), ds.block_bytes);
              d.synchronize();
              const HostTopology ref =
                  make_topology(plan.step(j, 0), mode, dp.buffer_rows, *keys, dp.trans_capacity, 0);
              const DevTopology t = ds.bind({back.data(), ds.block_bytes}).topo;
              EXPECT_EQ(listed(t.src), ref.src) << "step " << j;
              EXPECT_EQ(listed(t.weight), ref.weight) << "step " << j;
              EXPECT_EQ(listed(t.dst_row), ref.dst_row) << "step " << j;
              EXPECT_EQ(listed(t.t_offsets), ref.t_offsets) << "step " << j;
              EXPECT_EQ(listed(t.t_edge), ref.t_edge) << "step " << j;
              EXPECT_EQ(listed(t.edge_dst), ref.edge_dst) << "step " << j;
              EXPECT_EQ(listed(t.edge_src_key), ref.src_key) << "step " << j;
              EXPECT_EQ(listed(t.edge_dst_key), ref.dst_key) << "step " << j;
              EXPECT_EQ(listed(t.t_seg_row), ref.t_seg_row) << "step " << j;
              EXPECT_EQ(listed(t.t_seg_edge), ref.t_seg_edge) << "step " << j;
              if (run == 0) first_run.push_back(std::move(back));
              else EXPECT_EQ(std::memcmp(first_run[static_cast<size_t>(j)].data(), back.data(), back.size()), 0)
                       << "step " << j << ": the same bytes on a second run";
            }
          }
          EXPECT_EQ(runs[0], runs[1]);
        }
  }
#endif
}

#ifdef HT_HAVE_CUDA
namespace {

// One compute_gradients(2) with resident steps on a fresh executor of m
// GPUs, the steps derived on the GPUs or written by the host (`derive`),
// the GPUs' derivation refused (`refuse`): the loss, every parameter
// gradient and the steps the host derived.
struct DerivedRun {
  double loss = 0;
  std::vector<std::vector<float>> grads;
  int64_t on_host = 0;
};

DerivedRun derived_run(int m, const Graph& g, std::span<const int64_t> orig, const Plan& plan, const ModelConfig& cfg,
                       bool derive, bool refuse) {
  auto gpu = make_cuda_executor(m);
  TrainerOptions opt{cfg, {}, CommMode::full, GcnOrder::transform_first};
  opt.steps = StepPlacement::resident;
  opt.derive_steps = derive;
  opt.refuse_device_derivation = refuse;
  Trainer t(*gpu, g.view(), orig, plan, opt);
  DerivedRun r;
  r.loss = t.compute_gradients(2);
  for (const ParamTensor& pt : t.params().tensors) r.grads.push_back(pt.grad);
  r.on_host = t.steps_derived_on_host();
  return r;
}

void expect_same_bits(const DerivedRun& a, const DerivedRun& b) {
  EXPECT_EQ(std::memcmp(&a.loss, &b.loss, sizeof(double)), 0);
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t k = 0; k < a.grads.size(); ++k)
    EXPECT_EQ(std::memcmp(a.grads[k].data(), b.grads[k].data(), 4 * a.grads[k].size()), 0) << "tensor " << k;
}

// The derived-steps tests' model: 37-24-5, dropout 0.5, GAT's attention dropout 0.3.
ModelConfig derived_model(ModelKind kind, int heads = 1) {
  ModelConfig cfg;
  cfg.kind = kind;
  cfg.dims = {37, 24, 5};
  cfg.dropout = 0.5f;
  if (kind == ModelKind::gat) {
    cfg.heads = heads;
    cfg.attn_dropout = 0.3f;
  }
  return cfg;
}

}  // namespace
#endif

// Resident steps derived on the GPU (TrainerOptions::derive_steps) train to
// the same bits as steps the host writes whole: GCN with dropout, SAGE's
// mean, GAT with attention dropout (edge keys) on a graph with a hub; one
// GPU and two.
TEST(CudaEngine, DerivedStepsSameBitsAsHostWritten) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph(8000, 20000, 37, 6000);  // (hub < n: the hub's edges reach vertices 0 .. 5999)
  std::vector<int64_t> orig(g.num_vertices);
  std::iota(orig.begin(), orig.end(), 0);
  for (ModelKind kind : {ModelKind::gcn, ModelKind::sage, ModelKind::gat})
    for (int m : {1, 2}) {
      if (m > gpus()) {
        std::printf("[  SKIPPED ] m = %d needs %d GPUs, %d visible\n", m, m, gpus());
        continue;
      }
      SCOPED_TRACE(::testing::Message() << model_title(kind) << " m=" << m);
      const ModelConfig cfg = derived_model(kind, 2);
      Plan plan = build_plan(g.view(), test::range_partition(g, m, 3));
      expect_same_bits(derived_run(m, g, orig, plan, cfg, false, false), derived_run(m, g, orig, plan, cfg, true, false));
    }
#endif
}

// A GPU without room for the derivation's working memory leaves its
// resident steps to the host (Trainer::derive_on_host; here every GPU's
// derivation refused, TrainerOptions::refuse_device_derivation): the same
// bits as host-written steps, and the fallback taken for every step.
TEST(CudaEngine, DerivedStepsFallBackToTheHost) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph(8000, 20000, 37, 6000);
  std::vector<int64_t> orig(g.num_vertices);
  std::iota(orig.begin(), orig.end(), 0);
  const int m = std::min(gpus(), 2);
  for (ModelKind kind : {ModelKind::gcn, ModelKind::gat}) {
    SCOPED_TRACE(::testing::Message() << model_title(kind) << " m=" << m);
    const ModelConfig cfg = derived_model(kind);
    Plan plan = build_plan(g.view(), test::range_partition(g, m, 3));
    const DerivedRun host = derived_run(m, g, orig, plan, cfg, false, false);
    EXPECT_EQ(host.on_host, 0);
    const DerivedRun fallback = derived_run(m, g, orig, plan, cfg, true, true);
    EXPECT_EQ(fallback.on_host, 3 * m) << "every step derived on the host";
    expect_same_bits(host, fallback);
  }
#endif
}

// ReLU's mask from the cached output (TrainerOptions::mask_from_cache): with
// the GPU cache holding h^{l+1} in fp32, GCN's and SAGE's aggregate-first
// layers read the mask from it instead of recomputing z: the same bits as
// recomputing, on one GPU and two, the path taken in every batch.
TEST(CudaEngine, ReluMaskFromCachedOutputSameBits) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph();
  std::vector<int64_t> orig(g.num_vertices);
  std::iota(orig.begin(), orig.end(), 0);
  for (ModelKind kind : {ModelKind::gcn, ModelKind::sage})
    for (int m : {1, 2}) {
      if (m > gpus()) {
        std::printf("[  SKIPPED ] m = %d needs %d GPUs, %d visible\n", m, m, gpus());
        continue;
      }
      SCOPED_TRACE(::testing::Message() << model_title(kind) << " m=" << m);
      ModelConfig cfg;
      cfg.kind = kind;
      cfg.dims = {37, 48, 48, 5};  // layers 0 and 1 aggregate-first with ReLU (GCN: forced)
      cfg.dropout = 0.5f;
      Partition p = test::range_partition(g, m, 3);
      Plan plan = build_plan(g.view(), p);
      double loss[2] = {0, 0};
      int64_t masks[2] = {0, 0};
      std::vector<std::vector<float>> grads[2];
      for (int cached : {0, 1}) {
        auto gpu = make_cuda_executor(m);
        TrainerOptions opt{cfg, {}, CommMode::full, GcnOrder::aggregate_first};
        opt.gpu_cache = int64_t{1} << 30;
        opt.mask_from_cache = cached == 1;
        Trainer t(*gpu, g.view(), orig, plan, opt);
        loss[cached] = t.compute_gradients(2);
        masks[cached] = t.cached_masks();
        for (const ParamTensor& pt : t.params().tensors) grads[cached].push_back(pt.grad);
      }
      EXPECT_EQ(masks[0], 0);
      EXPECT_EQ(masks[1], 2 * 3 * m);  // layers 0 and 1, every batch on every GPU
      EXPECT_EQ(std::memcmp(&loss[0], &loss[1], sizeof(double)), 0);
      ASSERT_EQ(grads[0].size(), grads[1].size());
      for (size_t k = 0; k < grads[0].size(); ++k)
        EXPECT_EQ(std::memcmp(grads[0][k].data(), grads[1][k].data(), 4 * grads[0][k].size()), 0) << "tensor " << k;
    }
#endif
}

// A hub of 9,000 in- and out-edges (more than kLongRowEdges, so summed in
// segments by the sparse products, forward and transposed, and by a block in
// GAT's softmax and backward sums) in a plan's packed topology: the same
// gradients as the CPU executor, and the same bits on every GPU run. GCN
// widths 37 and 5 (float rows) and 24 (float4 rows); GAT 2 heads of 24.
TEST(CudaEngine, HubRowsEqualCpuExecutorSameBitsEveryRun) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph(12000, 40000, 37, 9000);
  std::vector<int64_t> orig(g.num_vertices);
  std::iota(orig.begin(), orig.end(), 0);
  const std::pair<ModelKind, GcnOrder> cases[] = {{ModelKind::gcn, GcnOrder::automatic},
                                                   {ModelKind::gcn, GcnOrder::aggregate_first},
                                                   {ModelKind::gat, GcnOrder::automatic}};
  for (const auto& [kind, order] : cases) {
    SCOPED_TRACE(::testing::Message() << (kind == ModelKind::gcn ? "GCN" : "GAT") << " order "
                                      << static_cast<int>(order));
    ModelConfig cfg;
    cfg.kind = kind;
    cfg.dims = {37, 24, 5};
    cfg.heads = 2;
    Partition p = test::range_partition(g, 1, 2);
    Plan plan = build_plan(g.view(), p);
    TrainerOptions opt{cfg, {}, CommMode::full, order};
    CpuExecutor cpu(1);
    Trainer tc(cpu, g.view(), orig, plan, opt);
    const double lc = tc.compute_gradients(1);
    std::vector<std::vector<float>> runs[2];
    for (auto& grads : runs) {
      auto gpu = make_cuda_executor(1);
      Trainer tg(*gpu, g.view(), orig, plan, opt);
      EXPECT_NEAR(tg.compute_gradients(1), lc, 1e-4 * std::abs(lc));
      for (size_t k = 0; k < tc.params().tensors.size(); ++k) {
        EXPECT_LT(rel_err(tg.params().tensors[k].grad, tc.params().tensors[k].grad), 1e-4)
            << tc.params().tensors[k].name;
        grads.push_back(tg.params().tensors[k].grad);
      }
    }
    EXPECT_TRUE(runs[0] == runs[1]) << "two GPU runs differ";
  }
#endif
}

// The GPU cache on a GPU: whole matrices (gradients added on the device
// included) and the row tier (reads on the compute stream, a written
// matrix's tier rows written as its batches publish) change where rows are
// read, never their values: the same bits as --gpu-cache off on the same
// GPUs, for both gathered-matrix kinds (h^0; t^l or h^l written every epoch).
TEST(CudaEngine, GpuCacheAndRowTierEqualCacheOff) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph();
  for (ModelKind kind : {ModelKind::gcn, ModelKind::gat})
    for (int m : {1, 2})
      for (CommMode comm : {CommMode::p2p, CommMode::full})
        for (StoreDtype dtype : {StoreDtype::f32, StoreDtype::bf16}) {
          if (m > gpus()) continue;
          ModelConfig cfg;
          cfg.kind = kind;
          cfg.dims = {37, 48, 24, 5};  // GCN: layer 0 aggregate-first (gathers h^0), then transform-first
          cfg.heads = 3;
          cfg.dropout = 0.5f;
          cfg.attn_dropout = kind == ModelKind::gat ? 0.3f : 0.0f;
          Partition p = test::range_partition(g, m, 3);
          Plan plan = build_plan(g.view(), p);
          std::vector<int64_t> orig(g.num_vertices);
          std::iota(orig.begin(), orig.end(), 0);
          auto run = [&](int64_t cache, int whole, int64_t tier_rows, LinkCounters* counters,
                         GcnOrder order = GcnOrder::automatic) {
            auto gpu = make_cuda_executor(m);
            TrainerOptions opt{cfg, {}, comm, order};
            opt.host_dtype = dtype;
            opt.gpu_cache = cache;
            opt.gpu_accumulate = false;  // 16-bit gradients through the host: GpuAccumulatorsEqualCpuExecutor
            opt.cache_whole_max = whole;
            opt.tier_rows_max = tier_rows;
            Trainer t(*gpu, g.view(), orig, plan, opt);
            std::vector<float> out{static_cast<float>(t.compute_gradients(2))};
            for (const ParamTensor& pt : t.params().tensors) out.insert(out.end(), pt.grad.begin(), pt.grad.end());
            *counters = gpu->counters();
            for (int l = 1; l < cfg.num_layers(); ++l) {  // hidden outputs, cached rows read from the GPUs
              const std::vector<float> h = t.layer_output(l);
              out.insert(out.end(), h.begin(), h.end());
            }
            return out;
          };
          LinkCounters off_c, c;
          const std::vector<float> off = run(0, -1, -1, &off_c);
          const struct {
            const char* name;
            int whole;
            int64_t tier_rows;
          } variants[] = {{"whole", -1, 0}, {"tier of layer 0's input", 0, 40}, {"h^0 whole, tier of the next", 1, 40}};
          for (const auto& v : variants) {
            SCOPED_TRACE(::testing::Message() << (kind == ModelKind::gcn ? "GCN" : "GAT") << " m=" << m << " comm="
                                              << static_cast<int>(comm) << " store " << dtype_name(dtype) << ": "
                                              << v.name);
            const std::vector<float> cached = run(int64_t{1} << 30, v.whole, v.tier_rows, &c);
            ASSERT_EQ(cached.size(), off.size());
            EXPECT_EQ(std::memcmp(cached.data(), off.data(), off.size() * 4), 0);
            EXPECT_GT(c.cache_bytes, 0);
            EXPECT_LT(c.h2d_bytes, off_c.h2d_bytes);
          }
          if (kind != ModelKind::gcn) continue;
          // Every layer transform-first: the tier of t^0 takes ∇t^0's returns
          // (TrainerOptions::tier_returns; 16-bit rows added as the host adds them).
          SCOPED_TRACE(::testing::Message() << "GCN transform-first m=" << m << " comm=" << static_cast<int>(comm)
                                            << " store " << dtype_name(dtype) << ": tier of t^0 with its returns");
          LinkCounters tf_off_c;
          const std::vector<float> tf_off = run(0, -1, -1, &tf_off_c, GcnOrder::transform_first);
          const std::vector<float> tier = run(int64_t{1} << 30, 0, 40, &c, GcnOrder::transform_first);
          ASSERT_EQ(tier.size(), tf_off.size());
          EXPECT_EQ(std::memcmp(tier.data(), tf_off.data(), tf_off.size() * 4), 0);
          EXPECT_LT(c.d2h_bytes, tf_off_c.d2h_bytes);
        }
#endif
}

}  // namespace ht

namespace ht {

TEST(CudaEngine, InMemoryEpochEqualsCpuExecutor) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph();
  const std::pair<ModelKind, GcnOrder> cases[] = {{ModelKind::gcn, GcnOrder::automatic},
                                                   {ModelKind::gcn, GcnOrder::aggregate_first},
                                                   {ModelKind::gat, GcnOrder::automatic}};
  for (const auto& [kind, order] : cases) {
    SCOPED_TRACE(::testing::Message() << (kind == ModelKind::gcn ? "GCN" : "GAT") << " order "
                                      << static_cast<int>(order));
    ModelConfig cfg;
    cfg.kind = kind;
    cfg.dims = {37, 24, 5};
    cfg.heads = 2;
    cfg.dropout = 0.5f;
    Partition p = test::range_partition(g, 1, 1);
    Plan plan = build_plan(g.view(), p);
    std::vector<int64_t> orig(g.num_vertices);
    std::iota(orig.begin(), orig.end(), 0);
    CpuExecutor cpu(1);
    auto gpu = make_cuda_executor(1);
    TrainerOptions on_device{cfg, {}, CommMode::full, order};
    on_device.store_on_device = true;
    Trainer tc(cpu, g.view(), orig, plan, {cfg, {}, CommMode::full, order});
    Trainer tg(*gpu, g.view(), orig, plan, on_device);
    ASSERT_TRUE(tg.store_on_device());
    for (int e = 0; e < 3; ++e) {
      tc.train_epoch(e);
      tg.train_epoch(e);
    }
    const double lc = tc.compute_gradients(3), lg = tg.compute_gradients(3);
    EXPECT_NEAR(lg, lc, 1e-4 * std::abs(lc));
    for (size_t k = 0; k < tc.params().tensors.size(); ++k)
      EXPECT_LT(rel_err(tg.params().tensors[k].grad, tc.params().tensors[k].grad), 1e-4) << tc.params().tensors[k].name;
    EXPECT_LT(rel_err(tg.logits(), tc.logits()), 1e-4);
    // No host-link traffic in in-memory mode.
    EXPECT_EQ(gpu->counters().h2d_bytes, 0);
    EXPECT_EQ(gpu->counters().d2h_bytes, 0);
  }
#endif
}

}  // namespace ht

namespace ht {

// Write-behind copies change when bytes reach the host, never what: on one
// GPU, without biases (their column sums use float atomics), a run with them
// equals a run without bit for bit; only the loss sum (double atomics) may
// differ in its last bits. The graph is large enough that copies and the next
// batch really overlap.
TEST(CudaEngine, WriteBehindEqualsInlineCopiesExactly) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  // Large enough that copies and compute overlap on a GPU; HT_TEST_SMALL=1
  // shrinks it 10x for the sanitizers (racecheck needs > 6 min at full size).
  const int64_t scale = std::getenv("HT_TEST_SMALL") ? 10 : 1;
  Graph g = epoch_graph(40000 / scale, 600000 / scale, 96);
  std::vector<int64_t> orig(g.num_vertices);
  std::iota(orig.begin(), orig.end(), 0);
  for (int chunks : {4, 1})
    for (GcnOrder order : {GcnOrder::automatic, GcnOrder::aggregate_first}) {
      SCOPED_TRACE(::testing::Message() << "chunks " << chunks << " order " << static_cast<int>(order));
      ModelConfig cfg;
      cfg.dims = {96, 64, 64, 5};
      cfg.dropout = 0.5f;
      cfg.bias = false;
      Partition p = test::range_partition(g, 1, chunks);
      Plan plan = build_plan(g.view(), p);
      // Variants: copies in line; written behind with read-ahead (resident
      // steps); the same with the steps streamed through the two-slot ring.
      std::vector<double> loss[3];
      std::vector<std::vector<float>> grads[3];
      for (int v = 0; v < 3; ++v) {
        auto gpu = make_cuda_executor(1);
        TrainerOptions opt{cfg, {}, CommMode::full, order};
        opt.overlap_copies = v >= 1;
        opt.steps = v == 2 ? StepPlacement::streamed : StepPlacement::resident;
        opt.store_on_device = chunks == 1;
        Trainer t(*gpu, g.view(), orig, plan, opt);
        for (int e = 0; e < 3; ++e) loss[v].push_back(t.train_epoch(e).loss);
        loss[v].push_back(t.compute_gradients(3));
        for (const ParamTensor& pt : t.params().tensors) grads[v].push_back(pt.grad);
        grads[v].push_back(t.logits());
      }
      for (int v = 1; v < 3; ++v) {
        SCOPED_TRACE(v == 1 ? "written behind" : "streamed steps");
        for (size_t e = 0; e < loss[0].size(); ++e) EXPECT_NEAR(loss[v][e], loss[0][e], 1e-12 * loss[0][e]);
        ASSERT_EQ(grads[v].size(), grads[0].size());
        for (size_t k = 0; k < grads[0].size(); ++k) EXPECT_TRUE(grads[v][k] == grads[0][k]) << "tensor " << k;
      }
    }
#endif
}

}  // namespace ht

namespace ht {

// 16-bit stores with the gradient matrices in the GPU cache as fp32
// accumulators: the GPU gives the CPU executor's gradients (up to a stored
// forward value rounding to the neighbouring 16-bit number, as in
// EpochEqualsCpuExecutor) and the same bits on every run.
TEST(CudaEngine, GpuAccumulatorsEqualCpuExecutor) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  Graph g = epoch_graph();
  std::vector<int64_t> orig(g.num_vertices);
  std::iota(orig.begin(), orig.end(), 0);
  for (ModelKind kind : {ModelKind::gcn, ModelKind::gat})
    for (int m : {1, 2})
      for (StoreDtype dtype : {StoreDtype::bf16, StoreDtype::f16}) {
        if (m > gpus()) continue;
        SCOPED_TRACE(::testing::Message() << (kind == ModelKind::gcn ? "GCN" : "GAT") << " m=" << m << " store "
                                          << dtype_name(dtype));
        ModelConfig cfg;
        cfg.kind = kind;
        cfg.dims = {37, 48, 24, 5};
        cfg.heads = 3;
        cfg.dropout = 0.5f;
        cfg.attn_dropout = kind == ModelKind::gat ? 0.3f : 0.0f;
        Partition p = test::range_partition(g, m, 3);
        Plan plan = build_plan(g.view(), p);
        TrainerOptions opt{cfg, {}, CommMode::full, GcnOrder::automatic};
        opt.host_dtype = dtype;
        opt.gpu_cache = int64_t{1} << 30;
        CpuExecutor cpu(m);
        Trainer tc(cpu, g.view(), orig, plan, opt);
        const double lc = tc.compute_gradients(2);
        const double tol = dtype == StoreDtype::f16 ? 2e-3 : 1.5e-2;
        std::vector<std::vector<float>> runs[2];
        for (auto& grads : runs) {
          auto gpu = make_cuda_executor(m);
          Trainer tg(*gpu, g.view(), orig, plan, opt);
          EXPECT_NEAR(tg.compute_gradients(2), lc, tol * std::abs(lc));
          EXPECT_EQ(gpu->counters().h2d_bytes, 0);
          for (size_t k = 0; k < tc.params().tensors.size(); ++k) {
            EXPECT_LT(rel_err(tg.params().tensors[k].grad, tc.params().tensors[k].grad), tol)
                << tc.params().tensors[k].name;
            grads.push_back(tg.params().tensors[k].grad);
          }
        }
        EXPECT_TRUE(runs[0] == runs[1]) << "two GPU runs differ";
      }
#endif
}

}  // namespace ht

namespace ht {

// The per-product choice of --spmm (engine/spmm_backend.hpp): runs without a
// GPU. own and auto give the own kernels (auto until measured), cusparse
// gives cuSPARSE where it can take the case.
TEST(SpmmBackend, ChoicePerProduct) {
  for (SpmmProduct p : {SpmmProduct::forward, SpmmProduct::transpose, SpmmProduct::gat}) {
    const SpmmCase c{p, 1000, 2000, 30000, 64, p == SpmmProduct::gat ? 4 : 0, false};
    EXPECT_EQ(choose_spmm_backend(SpmmBackend::own, c), SpmmBackend::own);
    EXPECT_EQ(choose_spmm_backend(SpmmBackend::cusparse, c), SpmmBackend::cusparse);
    EXPECT_EQ(choose_spmm_backend(SpmmBackend::automatic, c), SpmmBackend::own);
  }
  // Input rows past 32-bit column indices: the own kernels, whatever was asked.
  const SpmmCase wide{SpmmProduct::forward, 1000, int64_t{1} << 31, 30000, 64};
  EXPECT_FALSE(cusparse_takes(wide));
  EXPECT_EQ(choose_spmm_backend(SpmmBackend::cusparse, wide), SpmmBackend::own);
  EXPECT_EQ(name_of(SpmmBackend::cusparse), "cusparse");
  EXPECT_EQ(spmm_backend_names().at("auto"), SpmmBackend::automatic);
}

namespace {

// GCN's normalization on a random topology: w = 1 / sqrt(deg(src row) deg(dst)).
[[maybe_unused]] void gcn_weights(HostTopology& t) {
  std::vector<int64_t> src_deg(t.num_src_rows, 0);
  for (uint32_t s : t.src) ++src_deg[s];
  for (int64_t d = 0; d < t.num_dst; ++d)
    for (int64_t e = t.offsets[d]; e < t.offsets[d + 1]; ++e)
      t.weight[e] = static_cast<float>(1.0 / std::sqrt(double(src_deg[t.src[e]]) * double(t.offsets[d + 1] - t.offsets[d])));
}

}  // namespace

// cuSPARSE (cusparseSpMM, CSR_ALG3) against the own kernels on the same GPU:
// forward and transposed products with GCN weights, widths that are and are
// not multiples of 4, with and without a hub (rows past kLongRowEdges), and
// GAT's weighted aggregation (heads concatenated, averaged, one); equal up to
// float rounding, and cuSPARSE's results the same bits on a second run.
TEST(CudaKernels, CusparseEqualsOwnKernels) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  auto own = make_cuda_executor(1, 0, 0, SpmmBackend::own);
  auto lib = make_cuda_executor(1, 0, 0, SpmmBackend::cusparse);
  for (int64_t hub : {int64_t{0}, int64_t{20000}})
    for (int64_t cols : {int64_t{5}, int64_t{24}, int64_t{37}, int64_t{64}}) {
      SCOPED_TRACE(::testing::Message() << "cols " << cols << " hub " << hub);
      const int64_t nd = hub ? 40 : 301, rows = hub ? 5000 : 433;
      HostTopology ht = random_topology(nd, rows, 21, hub);
      gcn_weights(ht);
      std::vector<std::vector<float>> res[3];
      int side = 0;
      for (Executor* e : {own.get(), lib.get(), lib.get()}) {
        Device& d = e->device(0);
        DevTopology t = upload_topology(d, ht);
        d.reserve(d.spmm_scratch(ht.src.size() / kLongRowEdges + 2, cols));
        DevArray<float> x = d.upload(std::span<const float>(random_floats(rows * cols, 22)));
        DevArray<float> dout = d.upload(std::span<const float>(random_floats(nd * cols, 23)));
        DevArray<float> dx = d.upload(std::span<const float>(random_floats(rows * cols, 24)));
        DevArray<float> out = d.alloc_floats(nd * cols);
        d.spmm(t, {x.data, rows, cols}, {out.data, nd, cols});
        d.spmm_transpose_add(t, {dout.data, nd, cols}, {dx.data, rows, cols});
        d.synchronize();
        res[side].push_back(read_all(d, out));
        res[side++].push_back(read_all(d, dx));
      }
      const double tol = hub ? 1e-4 : 1e-5;
      for (int k = 0; k < 2; ++k) {
        EXPECT_LT(rel_err(res[1][k], res[0][k]), tol) << (k ? "transpose" : "forward");
        EXPECT_TRUE(res[1][k] == res[2][k]) << (k ? "transpose" : "forward") << ": two cuSPARSE runs differ";
      }
    }
  struct Gat {
    bool mean;
    int64_t heads, f, hub;
  };
  for (const Gat c : {Gat{false, 3, 11, 0}, Gat{true, 3, 11, 0}, Gat{true, 1, 24, 0}, Gat{false, 4, 16, 20000},
                      Gat{true, 2, 12, 20000}}) {
    SCOPED_TRACE(::testing::Message() << "GAT " << (c.mean ? "mean" : "concat") << " heads " << c.heads << " f "
                                      << c.f << " hub " << c.hub);
    const int64_t nd = c.hub ? 40 : 83, rows = c.hub ? 5000 : 117, gcols = c.heads * c.f;
    const int64_t ocols = c.mean ? c.f : gcols;
    const HostTopology ht = random_topology(nd, rows, 5, c.hub);
    const int64_t ne = static_cast<int64_t>(ht.src.size());
    std::vector<float> w = random_floats(ne * c.heads, 25);
    for (float& v : w) v = std::abs(v);  // attention weights are not negative
    std::vector<float> res[3];
    int side = 0;
    for (Executor* e : {own.get(), lib.get(), lib.get()}) {
      Device& d = e->device(0);
      DevTopology t = upload_topology(d, ht);
      d.reserve(d.spmm_scratch(ne / kLongRowEdges + 2, gcols));
      DevArray<float> g = d.upload(std::span<const float>(random_floats(rows * gcols, 26)));
      DevArray<float> a = d.upload(std::span<const float>(w));
      DevArray<float> o = d.alloc_floats(nd * ocols);
      d.gat_aggregate(t, {g.data, rows, gcols}, a, static_cast<int>(c.heads), c.mean, {o.data, nd, ocols});
      d.synchronize();
      res[side++] = read_all(d, o);
    }
    EXPECT_LT(rel_err(res[1], res[0]), c.hub ? 1e-4 : 1e-5);
    EXPECT_TRUE(res[1] == res[2]) << "two cuSPARSE runs differ";
  }
#endif
}

// Training with --spmm cusparse: the losses of every epoch within 1e-5
// relative of the own kernels' (GCN both orders, GAT), m = 1 and 2 GPUs, on
// the plain graph and on one with a hub; two cuSPARSE runs the same bits.
TEST(CudaEngine, CusparseTrainingEqualsOwnKernels) {
  REQUIRE_GPUS(1);
#ifdef HT_HAVE_CUDA
  for (int64_t hub : {int64_t{0}, int64_t{9000}}) {
    Graph g = hub ? epoch_graph(12000, 40000, 37, hub) : epoch_graph();
    std::vector<int64_t> orig(g.num_vertices);
    std::iota(orig.begin(), orig.end(), 0);
    const std::pair<ModelKind, GcnOrder> cases[] = {{ModelKind::gcn, GcnOrder::automatic},
                                                     {ModelKind::gcn, GcnOrder::aggregate_first},
                                                     {ModelKind::gat, GcnOrder::automatic}};
    for (const auto& [kind, order] : cases)
      for (int m : {1, 2}) {
        if (m > gpus()) continue;
        SCOPED_TRACE(::testing::Message() << (kind == ModelKind::gcn ? "GCN" : "GAT") << " order "
                                          << static_cast<int>(order) << " m " << m << " hub " << hub);
        ModelConfig cfg;
        cfg.kind = kind;
        cfg.dims = {37, 24, 5};
        cfg.heads = 3;
        cfg.dropout = 0.5f;
        cfg.attn_dropout = kind == ModelKind::gat ? 0.3f : 0.0f;
        Partition p = test::range_partition(g, m, 2);
        Plan plan = build_plan(g.view(), p);
        TrainerOptions opt{cfg, {}, CommMode::full, order};
        auto losses = [&](SpmmBackend backend) {
          auto gpu = make_cuda_executor(m, 0, 0, backend);
          Trainer t(*gpu, g.view(), orig, plan, opt);
          std::vector<double> out;
          for (int epoch = 0; epoch < 5; ++epoch) out.push_back(t.train_epoch(epoch).loss);
          return out;
        };
        const std::vector<double> own = losses(SpmmBackend::own), lib = losses(SpmmBackend::cusparse);
        for (size_t k = 0; k < own.size(); ++k) EXPECT_NEAR(lib[k], own[k], 1e-5 * std::abs(own[k])) << "epoch " << k;
        EXPECT_TRUE(losses(SpmmBackend::cusparse) == lib) << "two cuSPARSE runs differ";
      }
  }
#endif
}

}  // namespace ht
