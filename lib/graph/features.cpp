#include "graph/features.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"

namespace ht {

std::vector<float> widen_features(const GraphView& g) {
  if (g.feature_dtype == StoreDtype::f32) return {g.features.begin(), g.features.end()};
  std::vector<float> out;
  resize_for_overwrite(out, g.features16.size());
  const StoreDtype t = g.feature_dtype;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) out[i] = widen16(g.features16[i], t);
  return out;
}

std::vector<uint16_t> narrow_features(std::span<const float> x, int32_t dim, StoreDtype t,
                                      std::span<const int64_t> orig_ids) {
  HT_CHECK(t != StoreDtype::f32, "narrow_features needs a 16-bit dtype");
  HT_CHECK(dim > 0 && x.size() % static_cast<size_t>(dim) == 0, "{} feature values do not form rows of {}", x.size(),
           dim);
  std::vector<uint16_t> out;
  resize_for_overwrite(out, x.size());
  const int64_t n = static_cast<int64_t>(x.size());
  int64_t bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = narrow16(x[i], t);
    out[i] = h;
    // A finite value beyond the dtype's range: for fp16 beyond ±65504 (what
    // ht-train's fp16 store refuses; up to 65519 would round to 65504), for
    // bf16 one that rounds to ±Inf.
    if (std::isfinite(x[i]) && (t == StoreDtype::f16 ? std::fabs(x[i]) > kF16Max : !std::isfinite(widen16(h, t))))
      bad = std::min(bad, i);
  }
  if (bad < n) {
    const int64_t v = bad / dim, c = bad % dim;
    const std::string id = v < static_cast<int64_t>(orig_ids.size()) ? fmt::format(" (input id {})", orig_ids[v]) : "";
    const std::string range = t == StoreDtype::f16 ? fmt::format("±{}", kF16Max) : "±3.39e38";
    throw Error(fmt::format("feature of vertex {}{}, column {} is {}, beyond {}'s range ({}): {} cannot store it{}", v,
                            id, c, x[bad], dtype_name(t), range, dtype_name(t),
                            t == StoreDtype::f16 ? "; use bf16 (fp32's range) or scale the features" : ""));
  }
  return out;
}

void convert_features(Graph& g, StoreDtype t) {
  if (g.feature_dtype == t) return;
  if (g.feature_dtype != StoreDtype::f32) {
    g.features = widen_features(g.view());
    g.features16 = {};
    g.feature_dtype = StoreDtype::f32;
  }
  if (t == StoreDtype::f32) return;
  if (!g.features.empty()) g.features16 = narrow_features(g.features, g.feature_dim, t, g.orig_ids);
  g.features = {};
  g.feature_dtype = t;
}

}  // namespace ht
