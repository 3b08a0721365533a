#include "graph/feature_rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"

namespace ht {

void fill_feature_bytes(const FeatureRows& rows, StoreDtype t, uint64_t offset, std::span<std::byte> out) {
  const auto elem = static_cast<uint64_t>(dtype_bytes(t));
  const auto dim = static_cast<uint64_t>(rows.dim);
  HT_CHECK(dim > 0 && offset % elem == 0 && out.size() % elem == 0,
           "feature bytes [{}, +{}) do not start and end on {} elements", offset, out.size(), dtype_name(t));
  const uint64_t first = offset / elem, last = first + out.size() / elem;  // element range
  std::vector<float> row(dim);
  // Row by row: the range starts and ends inside rows in general, and one
  // row of scratch is all the state this needs (called per 4 MiB piece).
  for (uint64_t v = first / dim; v * dim < last; ++v) {
    rows.fill(static_cast<int64_t>(v), row);
    const uint64_t lo = std::max(first, v * dim), hi = std::min(last, (v + 1) * dim);
    std::byte* dst = out.data() + (lo - first) * elem;
    if (t == StoreDtype::f32) {
      std::memcpy(dst, row.data() + (lo - v * dim), (hi - lo) * elem);
      continue;
    }
    for (uint64_t i = lo; i < hi; ++i) {
      const float x = row[i - v * dim];
      const uint16_t h = narrow16(x, t);
      // A finite value beyond the dtype's range (as narrow_features: fp16
      // beyond ±65504, bf16 rounding to ±Inf).
      if (std::isfinite(x) && (t == StoreDtype::f16 ? std::fabs(x) > kF16Max : !std::isfinite(widen16(h, t)))) {
        const std::string range = t == StoreDtype::f16 ? fmt::format("±{}", kF16Max) : "±3.39e38";
        throw Error(fmt::format("feature of vertex {}, column {} is {}, beyond {}'s range ({}): {} cannot store it{}",
                                v, i - v * dim, x, dtype_name(t), range, dtype_name(t),
                                t == StoreDtype::f16 ? "; use bf16 (fp32's range) or scale the features" : ""));
      }
      std::memcpy(dst + (i - lo) * elem, &h, sizeof h);
    }
  }
}

std::vector<float> materialize_features(const FeatureRows& rows, int64_t n) {
  std::vector<float> x;
  if (rows.empty()) return x;
  const int64_t f = rows.dim;
  resize_for_overwrite(x, static_cast<size_t>(n * f));
  parallel_blocks(n, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) rows.fill(v, std::span<float>(x).subspan(static_cast<size_t>(v * f), f));
  });
  return x;
}

}  // namespace ht
