#include "engine/store_features.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "engine/host_rows.hpp"
#include "engine/trainer.hpp"
#include "graph/features.hpp"

namespace ht {

// fp16 holds magnitudes up to 65504: a larger feature would be stored as
// Inf, so it is refused before training (bf16 has fp32's range). The first
// bad element is named, whatever the file's feature dtype.
void check_f16_range(const GraphView& g) {
  const StoreDtype t = g.feature_dtype;
  const std::span<const float> f = g.features;
  const std::span<const uint16_t> h = g.features16;
  // fp16 patterns are in range unless Inf or NaN; fp32 and bf16 values are compared.
  const auto value = [&](int64_t i) { return t == StoreDtype::f32 ? f[i] : widen16(h[i], t); };
  const int64_t n = static_cast<int64_t>(t == StoreDtype::f32 ? f.size() : h.size());
  const int64_t bad = first_bad(n, [&](int64_t i) {
    return t == StoreDtype::f16 ? (h[i] & 0x7c00u) == 0x7c00u : !(std::fabs(value(i)) <= kF16Max);
  });
  if (bad < 0) return;
  const std::string in_file = t == StoreDtype::f32 ? "" : fmt::format(" ({} in the graph file)", dtype_name(t));
  throw Error(fmt::format("feature {} of vertex {} is {}{}, outside fp16's range (±{}): --host-dtype fp16 cannot store "
                          "it; use --host-dtype bf16 (fp32's range) or scale the features",
                          bad % g.feature_dim, bad / g.feature_dim, value(bad), in_file, kF16Max));
}

void fill_feature_store(Executor& exec, const HostMat& dst, const GraphView& g) {
  HT_CHECK(dst.rows == g.num_vertices && dst.cols == g.feature_dim && g.has_features(),
           "the feature store is {} x {} but the graph has {} x {} features", dst.rows, dst.cols, g.num_vertices,
           g.has_features() ? g.feature_dim : 0);
  if (g.feature_dtype == StoreDtype::f32) return exec.store_fill(dst, g.features);
  if (dst.on_device()) {  // in-memory mode: an fp32 store in device memory
    const std::vector<float> x = widen_features(g);
    return exec.store_fill(dst, x);
  }
  exec.synchronize_all();  // as Executor::store_fill: no queue may still write the rows
  if (dst.dtype == g.feature_dtype) return parallel_copy(dst.data, g.features16.data(), g.features16.size_bytes());
  if (dst.dtype != StoreDtype::f32)
    log::info("features: {} in the graph file, {} in the store: widened and rounded again", dtype_name(g.feature_dtype),
              dtype_name(dst.dtype));
  parallel_blocks(dst.rows, [&](int64_t b, int64_t e) {
    std::vector<float> row(static_cast<size_t>(dst.cols));
    for (int64_t r = b; r < e; ++r) {
      g.load_feature_row(r, row);
      store_row(dst, r, row.data(), dst.cols);
    }
  });
}

}  // namespace ht
