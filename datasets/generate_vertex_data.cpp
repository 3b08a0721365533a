// Random vertex data (features, labels, split) for the synthetic generators.
// Every value is keyed by (seed, vertex[, column]) so rows can be filled in
// any order by any number of threads with identical results.
#include <cmath>
#include <numbers>

#include "core/error.hpp"
#include "datasets/generate_detail.hpp"

namespace ht::gen::detail {

void validate_split_fractions(double train, double val) {
  HT_CHECK(std::isfinite(train) && train >= 0 && train <= 1, "train fraction must be in [0, 1], got {}", train);
  HT_CHECK(std::isfinite(val) && val >= 0 && val <= 1, "validation fraction must be in [0, 1], got {}", val);
  HT_CHECK(train + val <= 1 + 1e-12, "train fraction {} + validation fraction {} exceed 1", train, val);
}

void validate_vertex_data(const VertexDataParams& p) {
  HT_CHECK(p.feature_dim >= 0, "feature dimension must be >= 0, got {}", p.feature_dim);
  HT_CHECK(p.num_classes >= 0, "number of classes must be >= 0, got {}", p.num_classes);
  validate_split_fractions(p.train_fraction, p.val_fraction);
}

void fill_normal_row(uint64_t seed, int64_t row, std::span<float> out, float scale) {
  constexpr float kTwoPi = 2.0f * std::numbers::pi_v<float>;
  const size_t f = out.size();
  for (size_t j = 0; j < f; j += 2) {
    const uint64_t h = rng::hash(seed, static_cast<uint64_t>(row), j / 2);
    // u1 in (0, 1) (never 0: the log must stay finite), u2 in [0, 1).
    const float u1 = (static_cast<float>(h >> 40) + 0.5f) * (1.0f / 16777216.0f);
    const float u2 = static_cast<float>((h >> 8) & 0xFFFFFF) * (1.0f / 16777216.0f);
    const float r = std::sqrt(-2.0f * std::log(u1)) * scale;
    out[j] = r * std::cos(kTwoPi * u2);
    if (j + 1 < f) out[j + 1] = r * std::sin(kTwoPi * u2);
  }
}

int32_t uniform_label(uint64_t seed, int64_t v, int32_t num_classes) {
  rng::Stream s(rng::hash(seed, kTagLabels), static_cast<uint64_t>(v));
  return static_cast<int32_t>(s.below(static_cast<uint64_t>(num_classes)));
}

std::vector<uint8_t> make_split(int64_t n, double train, double val, uint64_t seed) {
  validate_split_fractions(train, val);
  std::vector<uint8_t> split(n);
  const uint64_t key = rng::hash(seed, kTagSplit);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t v = 0; v < n; ++v) {
    const double u = rng::to_unit_double(rng::hash(key, static_cast<uint64_t>(v)));
    const Split s = u < train ? Split::train : (u < train + val ? Split::val : Split::test);
    split[v] = static_cast<uint8_t>(s);
  }
  return split;
}

void attach_random_vertex_data(Graph& g, const VertexDataParams& p, uint64_t seed) {
  validate_vertex_data(p);
  const int64_t n = g.num_vertices;
  if (p.feature_dim > 0) {
    const int64_t f = p.feature_dim;
    g.feature_dim = p.feature_dim;
    g.features.resize(static_cast<size_t>(n * f));
    const uint64_t key = rng::hash(seed, kTagFeatures);
    Progress progress("generating features", n, "rows");
    const int64_t blocks = ceil_div(n, kVertexBlock);
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t end = std::min(n, (b + 1) * kVertexBlock);
      for (int64_t v = b * kVertexBlock; v < end; ++v)
        fill_normal_row(key, v, std::span<float>(g.features).subspan(static_cast<size_t>(v * f), f), 1.0f);
      progress.add(end - b * kVertexBlock);
    }
  }
  // A split only means something with labels to train on.
  if (p.num_classes > 0) {
    g.num_classes = p.num_classes;
    g.labels.resize(n);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
    for (int64_t v = 0; v < n; ++v) g.labels[v] = uniform_label(seed, v, p.num_classes);
    g.split = make_split(n, p.train_fraction, p.val_fraction, seed);
  }
}

}  // namespace ht::gen::detail
