#pragma once
// CPU reference executor: plain C++ + OpenMP. Emulates m GPUs with separate
// buffers, so the whole plan (P2P reads, in-place reuse, pushes, flushes)
// runs and is tested on a machine with no GPU. It is the oracle for the CUDA
// executor and a usable fallback.
//
// Copy timing: write-behind copies run either at once (`eager`, the earliest
// moment a GPU could run them) or as late as the ordering calls allow
// (`late`: at wait_write_behind of their slot, or drain). A missing wait or
// drain in the training loop then shows up as a wrong result in CPU tests.
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "engine/executor.hpp"

namespace ht {

enum class CopyTiming { eager, late };

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int index, CopyTiming timing = CopyTiming::eager) : index_(index), timing_(timing) {}
  int index() const override { return index_; }

  DevMat alloc_mat(int64_t rows, int64_t cols) override;
  DevArray<float> alloc_floats(int64_t n) override;
  DevIdx upload(std::span<const uint32_t> v) override { return store(u32_, v); }
  DevArray<int64_t> upload(std::span<const int64_t> v) override { return store(i64_, v); }
  DevArray<float> upload(std::span<const float> v) override { return store(f32_, v); }
  DevArray<uint8_t> upload(std::span<const uint8_t> v) override { return store(u8_, v); }
  DevArray<int32_t> upload(std::span<const int32_t> v) override { return store(i32_, v); }
  void write(DevArray<float> dst, std::span<const float> src) override;
  void read(DevArray<float> src, std::span<float> dst) override;

  void gather_from_host(const HostMat& src, DevIdx src_rows, DevIdx dst_rows, DevMat dst,
                        const DropoutSpec& drop) override;
  void copy_from_host(const HostMat& src, int64_t src_row0, int64_t n, DevMat dst, int64_t dst_row0) override;
  void copy_to_host(DevMat src, int64_t src_row0, int64_t n, const HostMat& dst, int64_t dst_row0) override;
  void pull_from_peer(Device& peer, DevMat peer_src, DevIdx peer_rows, DevMat dst, int64_t dst_row0) override;
  void push_add_to_peer(DevMat src, int64_t src_row0, Device& peer, DevMat peer_dst, DevIdx peer_rows) override;
  void flush_add_to_host(DevMat src, DevIdx src_rows, DevIdx host_rows, std::span<const uint32_t> host_rows_cpu,
                         const HostMat& host) override;
  void write_behind(DevMat src, int64_t src_row0, int64_t n, const HostMat& dst, int64_t dst_row0,
                    int slot) override;
  void wait_write_behind(int slot) override;
  void drain() override;
  void zero(DevMat m, int64_t row0, int64_t n) override;
  void zero(DevArray<float> a) override;

  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc) override;
  void spmm(const DevTopology& t, DevMat x, DevMat out) override;
  void spmm_transpose_add(const DevTopology& t, DevMat dout, DevMat dx) override;
  void bias_act(DevMat z, DevArray<float> bias, Act act, DevMat h) override;
  void act_backward(DevMat dh, DevMat z, Act act, DevMat dz) override;
  void col_sum_add(DevMat m, DevArray<float> grad) override;
  void dropout_rows(DevMat m, int64_t key_row0, const DropoutSpec& drop) override;

  void gat_scores(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst, int heads,
                  float slope, DevArray<float> pre, DevArray<float> score) override;
  void gat_softmax(const DevTopology& t, int heads, DevArray<float> score, DevArray<float> alpha,
                   DevArray<float> alpha_drop, const DropoutSpec& attn) override;
  void gat_aggregate(const DevTopology& t, DevMat g, DevArray<float> alpha_drop, int heads, bool mean,
                     DevMat out) override;
  void gat_backward(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst, int heads,
                    float slope, bool mean, DevArray<float> pre, DevArray<float> alpha, DevArray<float> alpha_drop,
                    const DropoutSpec& attn, DevMat dout, DevMat dg, DevArray<float> d_att_src,
                    DevArray<float> d_att_dst) override;

  LossStats softmax_xent(DevMat logits, DevArray<int32_t> labels, DevArray<uint8_t> split, int64_t first_vertex,
                         float scale, DevMat dlogits) override;
  void synchronize() override {}

  int64_t allocated_bytes() const { return bytes_; }

 private:
  template <typename T>
  DevArray<T> store(std::deque<std::vector<T>>& pool, std::span<const T> v) {
    pool.emplace_back(v.begin(), v.end());
    bytes_ += static_cast<int64_t>(v.size() * sizeof(T));
    return {pool.back().data(), static_cast<int64_t>(v.size())};
  }
  int index_;
  CopyTiming timing_;
  std::vector<std::function<void()>> pending_writes_[2];  // late write-behind copies by slot
  int64_t bytes_ = 0;
  std::deque<std::vector<float>> f32_;
  std::deque<std::vector<uint32_t>> u32_;
  std::deque<std::vector<int64_t>> i64_;
  std::deque<std::vector<uint8_t>> u8_;
  std::deque<std::vector<int32_t>> i32_;
};

class CpuExecutor final : public Executor {
 public:
  explicit CpuExecutor(int num_devices, CopyTiming timing = CopyTiming::eager);
  std::string name() const override { return "cpu"; }
  int num_devices() const override { return static_cast<int>(devices_.size()); }
  Device& device(int i) override { return *devices_.at(i); }
  HostMat alloc_host(int64_t rows, int64_t cols) override;
  void allreduce_sum(std::span<DevArray<float>> per_device) override;
  int64_t peak_device_bytes() const override;
  int64_t host_bytes() const override { return host_bytes_; }

 private:
  std::vector<std::unique_ptr<CpuDevice>> devices_;
  std::deque<std::vector<float>> host_;
  int64_t host_bytes_ = 0;
};

}  // namespace ht
