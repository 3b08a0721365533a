// R-MAT (Chakrabarti et al. 2004) with Graph500 defaults, noise-free: each
// edge descends `scale` levels of the adjacency matrix, choosing quadrant
// a (top-left), b (top-right), c (bottom-left) or d at each level. Row = source,
// column = destination. Duplicates and self-loops are kept as drawn.
//
// Vertex ids are then scrambled by a seeded bijection (as Graph500 does):
// unscrambled R-MAT puts every hub at a small id, which makes id ranges
// (chunks, partitions) trivially unbalanced and hides bugs that only show
// when hubs are spread out.
#include <cmath>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "datasets/generate_detail.hpp"

namespace ht::gen {
namespace detail {

IdScramble::IdScramble(uint64_t seed, int bits)
    : mask_(bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1), shift_(std::max(1, (bits + 1) / 2)) {
  for (int i = 0; i < 2; ++i) {
    mul_[i] = rng::hash(seed, kTagScramble, 2 * i) | 1;  // odd: invertible mod 2^bits
    add_[i] = rng::hash(seed, kTagScramble, 2 * i + 1) & mask_;
    // Newton's iteration for the inverse mod 2^64: each step doubles the
    // correct low bits (an odd m is its own inverse mod 8: 3 bits to start).
    uint64_t inv = mul_[i];
    for (int k = 0; k < 5; ++k) inv *= 2 - mul_[i] * inv;
    inv_[i] = inv;
  }
}

}  // namespace detail

namespace {

// Quadrant thresholds on a 32-bit uniform draw.
struct Quadrants {
  uint64_t a, ab, abc;  // r < a: (0,0); < a+b: (0,1); < a+b+c: (1,0); else (1,1)
};

Quadrants quadrants(const RmatParams& p) {
  const double probs[] = {p.a, p.b, p.c, p.d};
  for (double x : probs)
    HT_CHECK(std::isfinite(x) && x >= 0, "R-MAT probabilities a, b, c, d must be >= 0, got {} {} {} {}", p.a,
             p.b, p.c, p.d);
  const double sum = p.a + p.b + p.c + p.d;
  HT_CHECK(std::abs(sum - 1.0) < 1e-6, "R-MAT probabilities a + b + c + d must sum to 1, got {}", sum);
  auto scaled = [&](double x) { return static_cast<uint64_t>(std::llround(x / sum * 4294967296.0)); };
  return {scaled(p.a), scaled(p.a + p.b), scaled(p.a + p.b + p.c)};
}

}  // namespace

GeneratedGraph generate(const RmatParams& p) {
  HT_CHECK(p.scale >= 1 && p.scale <= 30, "R-MAT scale must be in [1, 30] (N = 2^scale), got {}", p.scale);
  HT_CHECK(p.num_edges >= 0, "R-MAT number of edges must be >= 0 (0 = 16 * 2^scale), got {}", p.num_edges);
  detail::validate_vertex_data(p.data);
  const Quadrants q = quadrants(p);
  Timer timer;
  const int scale = p.scale;
  const int64_t n = int64_t{1} << scale;
  const int64_t m = p.num_edges > 0 ? p.num_edges : 16 * n;
  const detail::IdScramble scramble(p.seed, scale);
  // One 64-bit draw serves two levels (32 bits each).
  auto gen_block = [&](int64_t b, auto&& emit) {
    rng::Stream s = detail::block_stream(p.seed, b);
    const int64_t count = std::min(detail::kEdgeBlock, m - b * detail::kEdgeBlock);
    for (int64_t i = 0; i < count; ++i) {
      uint64_t row = 0, col = 0, bits = 0;
      for (int level = 0; level < scale; ++level) {
        if ((level & 1) == 0) bits = s.next();
        const uint64_t r = (level & 1) ? (bits >> 32) : (bits & 0xFFFFFFFFu);
        // Branch-free (the branches would mispredict about once a level):
        // with c1 = r >= a, c2 = r >= a+b, c3 = r >= a+b+c, the quadrant
        // a, b, c, d has row bit c2 and column bit c1 ^ c2 ^ c3.
        const uint64_t c1 = r >= q.a, c2 = r >= q.ab, c3 = r >= q.abc;
        row |= c2 << level;
        col |= (c1 ^ c2 ^ c3) << level;
      }
      emit(static_cast<vid_t>(scramble(row)), static_cast<vid_t>(scramble(col)));
    }
  };
  Graph g = detail::csc_from_edge_blocks(n, detail::ceil_div(m, detail::kEdgeBlock), gen_block, m, "R-MAT graph");
  const detail::TopologyScan scan = detail::sort_and_scan(g);
  g.flags.has_self_loops = scan.has_self_loops;
  g.flags.no_duplicates = !scan.has_duplicates;
  g.flags.symmetric = false;  // R-MAT with b = c is symmetric only in distribution
  detail::attach_random_labels(g, p.data, p.seed);
  log::debug("R-MAT graph: scale {}, {} edges in {:.2f} s", scale, m, timer.seconds());
  return {std::move(g), detail::normal_feature_rows(p.seed, p.data.feature_dim)};
}

Graph rmat_graph(const RmatParams& p) { return with_features(generate(p)); }

}  // namespace ht::gen
