// Community graph: a degree-corrected stochastic block model (DC-SBM) with
// power-law expected degrees, undirected, without self-loops or duplicates;
// labels = communities; features = class mean + Gaussian noise.
//
// Edges: M = N * avg_degree / 2 undirected samples. A sample picks its first
// endpoint u with probability proportional to its weight w_u (community by
// weight, then vertex by an alias table of that community), then with
// probability `homophily` a partner inside u's community, otherwise one in
// another community, again proportional to w. With balanced communities each
// vertex's expected degree is avg_degree * w_v / mean(w) and a fraction
// `homophily` of its edges stays inside its community (as first endpoint by
// construction; as partner because the picks into its community come from
// its own community at rate h and from the others at rate 1 - h). Samples
// with u = v are skipped and repeated pairs kept once, so the realized
// degree and homophily are a little below the request (see
// bench/GENERATORS.md).
//
// Weights: Pareto with exponent `degree_exponent`, capped so that the
// largest expected degree is max(2 d, sqrt(N d / C)): beyond that, hub pairs
// inside a community would be drawn several times and lost to dedup,
// biasing the degree sequence and the homophily.
//
// Features: class k has a fixed random sign vector s_k in {-1, +1}^F; a
// vertex's row is signal * s_k / sqrt(F) + noise * N(0, 1)^F, so `signal` is
// the norm of the class mean and the per-vertex signal-to-noise ratio does
// not grow with F. At the defaults (signal = noise = 1) features alone
// separate the classes poorly, and averaging over neighbors (what a GCN
// layer does) helps a lot because neighbors mostly share the class.
#include <cmath>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "datasets/generate_detail.hpp"

namespace ht::gen {
namespace {

void validate(const CommunityParams& p) {
  HT_CHECK(p.num_vertices >= 1 && p.num_vertices <= kMaxVertices32,
           "community graph: number of vertices must be in [1, {}], got {}", kMaxVertices32, p.num_vertices);
  HT_CHECK(std::isfinite(p.avg_degree) && p.avg_degree >= 0 &&
               p.avg_degree <= static_cast<double>(p.num_vertices - 1),
           "community graph: average degree must be in [0, N - 1 = {}], got {}", p.num_vertices - 1,
           p.avg_degree);
  HT_CHECK(p.num_classes >= 1 && p.num_classes <= p.num_vertices,
           "community graph: number of classes must be in [1, N = {}], got {}", p.num_vertices, p.num_classes);
  HT_CHECK(std::isfinite(p.homophily) && p.homophily >= 0 && p.homophily <= 1,
           "community graph: homophily must be in [0, 1], got {}", p.homophily);
  HT_CHECK(std::isfinite(p.degree_exponent) && p.degree_exponent > 1,
           "community graph: degree exponent must be > 1, got {}", p.degree_exponent);
  HT_CHECK(p.feature_dim >= 0, "community graph: feature dimension must be >= 0, got {}", p.feature_dim);
  HT_CHECK(std::isfinite(p.signal), "community graph: signal must be finite, got {}", p.signal);
  HT_CHECK(std::isfinite(p.noise) && p.noise >= 0, "community graph: noise must be >= 0, got {}", p.noise);
  detail::validate_split_fractions(p.train_fraction, p.val_fraction);
}

// Power-law vertex weights, capped so that no expected degree exceeds
// `max_degree` (fixed point of cap = max_degree / d * mean(min(theta, cap))).
std::vector<double> vertex_weights(const CommunityParams& p) {
  const int64_t n = p.num_vertices;
  std::vector<double> w(n);
  const uint64_t key = rng::hash(p.seed, detail::kTagDegree);
  const double inv = -1.0 / (p.degree_exponent - 1.0);
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
  for (int64_t v = 0; v < n; ++v) {
    const double u = rng::to_unit_double(rng::hash(key, static_cast<uint64_t>(v)));
    w[v] = std::pow(1.0 - u, inv);  // Pareto(x_min = 1): P(theta > x) = x^-(exponent - 1)
  }
  if (p.avg_degree <= 0) return w;
  const double max_degree =
      std::max(2.0 * p.avg_degree, std::sqrt(static_cast<double>(n) * p.avg_degree / p.num_classes));
  const double ratio = max_degree / p.avg_degree;
  double cap = ratio * detail::deterministic_sum(n, [&](int64_t v) { return w[v]; }) / static_cast<double>(n);
  for (int it = 0; it < 100; ++it) {
    const double next =
        ratio * detail::deterministic_sum(n, [&](int64_t v) { return std::min(w[v], cap); }) / static_cast<double>(n);
    const bool converged = cap - next <= 1e-12 * cap;
    cap = next;
    if (converged) break;
  }
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
  for (int64_t v = 0; v < n; ++v) w[v] = std::min(w[v], cap);
  return w;
}

// Draws "vertex proportional to w" from one community in O(1): vertices
// grouped by community, one Walker/Vose alias table per community; and the
// community itself (of a first endpoint, or of a partner outside a given
// community) by a binary search over the C community weights.
class CommunitySampler {
 public:
  CommunitySampler(std::span<const int32_t> labels, std::span<const double> w, int32_t num_classes);

  double total_weight() const { return cum_.back(); }
  // The community whose cumulative weight range holds x in [0, total).
  int32_t community_at(double x) const { return find(0, num_classes(), x); }
  // A community other than k, proportional to weight; x uniform in [0, 1).
  // Returns k when no other community has weight.
  int32_t other_community(int32_t k, double x) const {
    const double before = cum_[k], after = total_weight() - cum_[k + 1];
    if (before + after <= 0) return k;
    x *= before + after;
    if (x < before || after <= 0) return find(0, k, x);
    return find(k + 1, num_classes(), cum_[k + 1] + (x - before));
  }
  vid_t vertex_in(int32_t k, rng::Stream& s) const {
    const int64_t lo = start_[k], size = start_[k + 1] - lo;
    const Slot& slot = slots_[lo + static_cast<int64_t>(s.below(static_cast<uint64_t>(size)))];
    return s.uniform() < slot.prob ? slot.self : slot.alias;
  }

 private:
  struct Slot {
    float prob;  // keep `self` with this probability, else take `alias`
    vid_t self, alias;
  };
  int32_t num_classes() const { return static_cast<int32_t>(start_.size()) - 1; }
  // The k in [lo, hi) with cum_[k] <= x < cum_[k + 1]. Rounding can put x
  // at the very top of the range: then the last non-empty community there.
  int32_t find(int32_t lo, int32_t hi, double x) const {
    const auto it = std::upper_bound(cum_.begin() + lo + 1, cum_.begin() + hi + 1, x);
    int32_t k = std::clamp(static_cast<int32_t>(it - cum_.begin()) - 1, lo, hi - 1);
    while (k > lo && cum_[k + 1] <= cum_[k]) --k;
    return k;
  }
  void build_alias(int32_t k, std::span<const vid_t> members, std::span<const double> w);

  std::vector<int64_t> start_;  // community k = slots_[start_[k] .. start_[k + 1])
  std::vector<double> cum_;     // cum_[k] = total weight of communities 0 .. k-1
  std::vector<Slot> slots_;
};

CommunitySampler::CommunitySampler(std::span<const int32_t> labels, std::span<const double> w,
                                   int32_t num_classes) {
  const int64_t n = static_cast<int64_t>(labels.size());
  start_.assign(num_classes + 1, 0);
  for (int32_t k : labels) ++start_[k + 1];
  for (int32_t k = 0; k < num_classes; ++k) start_[k + 1] += start_[k];
  std::vector<vid_t> order(n);  // vertices grouped by community, ascending ids
  std::vector<int64_t> pos(start_.begin(), start_.end() - 1);
  for (int64_t v = 0; v < n; ++v) order[pos[labels[v]]++] = static_cast<vid_t>(v);
  cum_.assign(num_classes + 1, 0.0);
  for (int32_t k = 0; k < num_classes; ++k) {
    double sum = 0;
    for (int64_t i = start_[k]; i < start_[k + 1]; ++i) sum += w[order[i]];
    cum_[k + 1] = cum_[k] + sum;
  }
  slots_.resize(n);
#pragma omp parallel for schedule(dynamic, 1) if (n > detail::kParallelMin)
  for (int32_t k = 0; k < num_classes; ++k)
    build_alias(k, std::span<const vid_t>(order).subspan(start_[k], start_[k + 1] - start_[k]), w);
}

// Vose's alias method: scaled weights p_i = w_i * size / W; each slot below 1
// is topped up by one slot above 1, which gives up the difference.
void CommunitySampler::build_alias(int32_t k, std::span<const vid_t> members, std::span<const double> w) {
  const int64_t size = static_cast<int64_t>(members.size());
  if (size == 0) return;
  const double scale = static_cast<double>(size) / (cum_[k + 1] - cum_[k]);
  std::vector<double> p(size);
  std::vector<int64_t> small, large;
  for (int64_t i = 0; i < size; ++i) {
    p[i] = w[members[i]] * scale;
    (p[i] < 1.0 ? small : large).push_back(i);
  }
  Slot* slot = slots_.data() + start_[k];
  while (!small.empty() && !large.empty()) {
    const int64_t s = small.back(), l = large.back();
    small.pop_back();
    slot[s] = {static_cast<float>(p[s]), members[s], members[l]};
    p[l] = (p[l] + p[s]) - 1.0;
    if (p[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // Leftovers are 1 up to rounding.
  for (int64_t i : small) slot[i] = {1.0f, members[i], members[i]};
  for (int64_t i : large) slot[i] = {1.0f, members[i], members[i]};
}

// Drops repeated sources within each destination's sorted range, in place.
// Repeated pairs come in mirrored copies, so the result stays symmetric.
void drop_sorted_duplicates(Graph& g) {
  const int64_t n = g.num_vertices;
  std::vector<int64_t> kept(n);
#pragma omp parallel for schedule(dynamic, 1024) if (n > detail::kParallelMin)
  for (int64_t v = 0; v < n; ++v) {
    auto first = g.sources.begin() + g.offsets[v], last = g.sources.begin() + g.offsets[v + 1];
    kept[v] = std::unique(first, last) - first;
  }
  int64_t out = 0;  // ranges only move left, so one sequential sweep is safe
  for (int64_t v = 0; v < n; ++v) {
    const int64_t begin = g.offsets[v];
    if (out != begin) std::copy(g.sources.begin() + begin, g.sources.begin() + begin + kept[v], g.sources.begin() + out);
    g.offsets[v] = out;
    out += kept[v];
  }
  g.offsets[n] = out;
  g.sources.resize(out);
}

}  // namespace

GeneratedGraph generate(const CommunityParams& p) {
  validate(p);
  Timer timer;
  const int64_t n = p.num_vertices;
  std::vector<int32_t> labels(n);
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
  for (int64_t v = 0; v < n; ++v) labels[v] = detail::uniform_label(p.seed, v, p.num_classes);
  const CommunitySampler sampler(labels, vertex_weights(p), p.num_classes);
  const double total = sampler.total_weight();

  const int64_t samples = std::llround(static_cast<double>(n) * p.avg_degree / 2.0);
  auto gen_block = [&](int64_t b, auto&& emit) {
    rng::Stream s = detail::block_stream(p.seed, b);
    const int64_t count = std::min(detail::kEdgeBlock, samples - b * detail::kEdgeBlock);
    for (int64_t i = 0; i < count; ++i) {
      const int32_t k = sampler.community_at(s.uniform() * total);
      const vid_t u = sampler.vertex_in(k, s);
      const bool inside = s.uniform() < p.homophily;
      const double r_other = s.uniform();  // drawn either way: one stream layout
      const vid_t v = sampler.vertex_in(inside ? k : sampler.other_community(k, r_other), s);
      if (u == v) continue;
      emit(u, v);
      emit(v, u);
    }
  };
  Graph g = detail::csc_from_edge_blocks(n, detail::ceil_div(samples, detail::kEdgeBlock), gen_block, 2 * samples,
                                         "community graph");
  detail::sort_and_scan(g);
  drop_sorted_duplicates(g);
  g.flags.symmetric = true;
  g.flags.has_self_loops = false;
  g.flags.no_duplicates = true;
  g.num_classes = p.num_classes;
  g.labels = std::move(labels);
  g.split = detail::make_split(n, p.train_fraction, p.val_fraction, p.seed);
  log::debug("community graph: {} vertices, {} directed edges (average degree {:.2f}) in {:.2f} s", n,
             g.num_edges(), static_cast<double>(g.num_edges()) / static_cast<double>(n), timer.seconds());
  // Labels are a pure function of the vertex, so the rows need no copy of them.
  auto label_of = [seed = p.seed, c = p.num_classes](int64_t v) { return detail::uniform_label(seed, v, c); };
  return {std::move(g),
          detail::class_feature_rows(p.seed, p.feature_dim, p.num_classes, p.signal, p.noise, label_of)};
}

Graph community_graph(const CommunityParams& p) { return with_features(generate(p)); }

}  // namespace ht::gen
