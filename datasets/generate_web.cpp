// Web-like directed graph: the structure of crawled web graphs (it-2004 and
// its kin) that matters to partitioning and out-of-core training: pages
// grouped into hosts, most links inside their host, power-law in- and
// out-degrees with a few hubs that a large part of the graph links to.
//
// Built in "host order" (host 0's pages first, each host a contiguous range
// of indices), then every id goes through a seeded bijection of [0, N)
// (IdPermutation) unless `host_order`: the locality is in the graph, for a
// partitioner to find, not in the ids.
//
// - Hosts: sizes Pareto(host_size_exponent) with the minimum chosen so that
//   the mean is host_size, rounded, capped at N / 64, the last one cut to fit.
// - Out-degrees: exactly num_edges links. Page u gets a Pareto
//   (out_degree_exponent) weight o_u, capped so that the largest out-degree is
//   max_out_degree; the links are dealt in proportion to the weights through
//   their running sums (per vertex block, then per page inside the block), so
//   the total is exact and no page's share depends on the thread count.
// - Targets: each link stays in u's host with probability `homophily` (hosts
//   of one page have nowhere to go), else goes to any host; either way the
//   page is drawn in proportion to a Pareto(degree_exponent) weight w_v,
//   capped so that the largest expected in-degree is max_in_degree (two-level
//   alias tables: host by its total weight, then page inside the host: O(1)).
//   A draw that hits u itself or a page u already links to is drawn again
//   (inside the host up to kMaxDraws times, then outside up to kMaxDraws
//   times, then the link is dropped: only in graphs too small for the
//   requested degrees), so the graph has no self-loops and no duplicates, as
//   a crawl has none, and hubs collect one link per page that links to them.
//   Redrawing inside keeps the fraction of links inside hosts at `homophily`
//   unless a host is too small for its pages' links.
// - Labels: one uniform class per host ("topic of a site"), features as the
//   community graph's (class mean + noise), split from fractions by vertex.
//
// Every draw is keyed by (seed, tag, page or host), so the graph depends on
// the seed only. The CSC is built by the two passes of csc_from_edge_blocks
// over blocks of source pages.
#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "datasets/generate_detail.hpp"

namespace ht::gen {
namespace {

// Source pages per edge block (about 28 * 4096 links at it-2004's degree).
constexpr int64_t kSourceBlock = 4096;
// Draws per link inside the host, then outside, before it is dropped.
constexpr int kMaxDraws = 32;

void validate(const WebParams& p) {
  HT_CHECK(p.num_vertices >= 1 && p.num_vertices <= kMaxVertices32,
           "web graph: number of vertices must be in [1, {}], got {}", kMaxVertices32, p.num_vertices);
  const double pairs = static_cast<double>(p.num_vertices) * static_cast<double>(p.num_vertices - 1);
  HT_CHECK(p.num_edges >= 0 && static_cast<double>(p.num_edges) <= pairs,
           "web graph: number of links must be in [0, N (N - 1) = {}] (no self-loops or duplicates), got {}",
           static_cast<int64_t>(pairs), p.num_edges);
  HT_CHECK(p.num_classes >= 1 && p.num_classes <= p.num_vertices,
           "web graph: number of classes must be in [1, N = {}], got {}", p.num_vertices, p.num_classes);
  HT_CHECK(std::isfinite(p.homophily) && p.homophily >= 0 && p.homophily <= 1,
           "web graph: homophily (links inside their host) must be in [0, 1], got {}", p.homophily);
  HT_CHECK(std::isfinite(p.degree_exponent) && p.degree_exponent > 1,
           "web graph: in-degree exponent must be > 1, got {}", p.degree_exponent);
  HT_CHECK(std::isfinite(p.out_degree_exponent) && p.out_degree_exponent > 1,
           "web graph: out-degree exponent must be > 1, got {}", p.out_degree_exponent);
  HT_CHECK(std::isfinite(p.host_size) && p.host_size >= 1, "web graph: mean host size must be >= 1, got {}",
           p.host_size);
  HT_CHECK(std::isfinite(p.host_size_exponent) && p.host_size_exponent > 2,
           "web graph: host size exponent must be > 2 (finite mean), got {}", p.host_size_exponent);
  HT_CHECK(p.max_in_degree >= 0, "web graph: max in-degree must be >= 0 (0 = automatic), got {}", p.max_in_degree);
  HT_CHECK(p.max_out_degree >= 0, "web graph: max out-degree must be >= 0 (0 = automatic), got {}", p.max_out_degree);
  HT_CHECK(p.feature_dim >= 0, "web graph: feature dimension must be >= 0, got {}", p.feature_dim);
  HT_CHECK(std::isfinite(p.signal), "web graph: signal must be finite, got {}", p.signal);
  HT_CHECK(std::isfinite(p.noise) && p.noise >= 0, "web graph: noise must be >= 0, got {}", p.noise);
  detail::validate_split_fractions(p.train_fraction, p.val_fraction);
}

// Pareto(x_min = 1) of exponent `a` (P(X > x) = x^-(a - 1)) from a hash.
double pareto(uint64_t h, double a) { return std::pow(1.0 - rng::to_unit_double(h), -1.0 / (a - 1.0)); }

// Pareto weights keyed by (seed, tag, index), capped so that the largest
// one is `ratio` times their mean (the fixed point of cap = ratio *
// mean(min(w, cap)), as the community generator's degrees).
std::vector<double> capped_weights(int64_t n, uint64_t seed, uint64_t tag, double exponent, double ratio) {
  std::vector<double> w(n);
  const uint64_t key = rng::hash(seed, tag);
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
  for (int64_t v = 0; v < n; ++v) w[v] = pareto(rng::hash(key, static_cast<uint64_t>(v)), exponent);
  const double inv_n = 1.0 / static_cast<double>(n);
  double cap = ratio * detail::deterministic_sum(n, [&](int64_t v) { return w[v]; }) * inv_n;
  for (int it = 0; it < 100; ++it) {
    const double next = ratio * detail::deterministic_sum(n, [&](int64_t v) { return std::min(w[v], cap); }) * inv_n;
    const bool converged = std::abs(cap - next) <= 1e-12 * cap;
    cap = next;
    if (converged) break;
  }
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
  for (int64_t v = 0; v < n; ++v) w[v] = std::min(w[v], cap);
  return w;
}

// Host h holds the pages [start[h], start[h + 1]) of the host order.
std::vector<int64_t> host_starts(const WebParams& p) {
  const double a = p.host_size_exponent;
  const double min_size = std::max(1.0, p.host_size * (a - 2.0) / (a - 1.0));  // Pareto mean = min * (a-1)/(a-2)
  const int64_t cap = std::max<int64_t>(1, p.num_vertices / 64);
  const uint64_t key = rng::hash(p.seed, detail::kTagHostSize);
  std::vector<int64_t> start{0};
  for (uint64_t h = 0; start.back() < p.num_vertices; ++h) {
    const auto size = std::clamp<int64_t>(std::llround(min_size * pareto(rng::hash(key, h), a)), 1, cap);
    start.push_back(std::min(p.num_vertices, start.back() + size));
  }
  return start;
}

// Vose's alias method over ranges: draws an index of [lo, hi) in proportion
// to its weight in O(1). One table serves every host (each host's slots are
// its own range), another the hosts themselves.
class RangeAlias {
 public:
  // Tables for each range [start[r], start[r + 1]) of w, in parallel.
  RangeAlias(std::span<const double> w, std::span<const int64_t> start) : slots_(w.size()) {
    const auto ranges = static_cast<int64_t>(start.size()) - 1;
#pragma omp parallel for schedule(dynamic, 64) if (w.size() > static_cast<size_t>(detail::kParallelMin))
    for (int64_t r = 0; r < ranges; ++r) build(w, start[r], start[r + 1]);
  }
  // An index of [lo, hi) (hi > lo), in proportion to the weights.
  int64_t draw(int64_t lo, int64_t hi, rng::Stream& s) const {
    const int64_t i = lo + static_cast<int64_t>(s.below(static_cast<uint64_t>(hi - lo)));
    const Slot& slot = slots_[i];
    return s.uniform() < slot.prob ? i : slot.alias;
  }

 private:
  struct Slot {
    float prob;    // keep the slot's own index with this probability
    vid_t alias;   // else take this one (ranges are < 2^31 long: N is)
  };
  void build(std::span<const double> w, int64_t lo, int64_t hi) {
    const int64_t size = hi - lo;
    double total = 0;
    for (int64_t i = lo; i < hi; ++i) total += w[i];
    std::vector<double> q(size);
    std::vector<int64_t> small, large;
    for (int64_t i = 0; i < size; ++i) {
      q[i] = total > 0 ? w[lo + i] * static_cast<double>(size) / total : 1.0;
      (q[i] < 1.0 ? small : large).push_back(i);
    }
    while (!small.empty() && !large.empty()) {
      const int64_t sm = small.back(), lg = large.back();
      small.pop_back();
      slots_[lo + sm] = {static_cast<float>(q[sm]), static_cast<vid_t>(lo + lg)};
      q[lg] = (q[lg] + q[sm]) - 1.0;
      if (q[lg] < 1.0) {
        large.pop_back();
        small.push_back(lg);
      }
    }
    for (int64_t i : small) slots_[lo + i] = {1.0f, static_cast<vid_t>(lo + i)};  // 1 up to rounding
    for (int64_t i : large) slots_[lo + i] = {1.0f, static_cast<vid_t>(lo + i)};
  }
  std::vector<Slot> slots_;
};

// The pages one source has linked to so far: open addressing, cleared per
// source (sized for its out-degree, so clearing costs what the links do).
class LinkSet {
 public:
  void reset(int64_t links) {
    const size_t size = std::bit_ceil(static_cast<size_t>(2 * links + 2));
    shift_ = 64 - std::countr_zero(size);
    table_.assign(size, kEmpty);
  }
  // False when x is already in.
  bool insert(vid_t x) {
    const size_t mask = table_.size() - 1;
    for (size_t i = (x * 0x9E3779B97F4A7C15ULL) >> shift_;; i = (i + 1) & mask) {
      if (table_[i] == x) return false;
      if (table_[i] == kEmpty) {
        table_[i] = x;
        return true;
      }
    }
  }

 private:
  static constexpr vid_t kEmpty = ~vid_t{0};  // never an id: N < 2^31
  std::vector<vid_t> table_;
  int shift_ = 64;
};

// Everything the link draws read, built once.
struct WebModel {
  std::vector<int64_t> host_start;   // H + 1
  std::vector<int32_t> host_class;   // H
  std::vector<double> out_weight;    // N, capped
  std::vector<int64_t> block_links;  // links of source block b: [block_links[b], block_links[b + 1])
  std::unique_ptr<RangeAlias> page;  // page of a host by in-weight
  std::unique_ptr<RangeAlias> host;  // host by total in-weight (one range: all hosts)
  detail::IdPermutation perm;
  bool shuffle;

  WebModel(const WebParams& p, int64_t links);
  int64_t hosts() const { return static_cast<int64_t>(host_start.size()) - 1; }
  int64_t host_of(int64_t u) const {
    return std::upper_bound(host_start.begin(), host_start.end(), u) - host_start.begin() - 1;
  }
  vid_t id(int64_t u) const { return static_cast<vid_t>(shuffle ? perm(static_cast<uint64_t>(u)) : u); }
};

WebModel::WebModel(const WebParams& p, int64_t links)
    : host_start(host_starts(p)), perm(rng::hash(p.seed, detail::kTagScramble), p.num_vertices),
      shuffle(!p.host_order) {
  const int64_t n = p.num_vertices, h = hosts();
  const double mean = static_cast<double>(links) / static_cast<double>(n);
  host_class.resize(h);
  for (int64_t k = 0; k < h; ++k)
    host_class[k] = static_cast<int32_t>(
        rng::Stream(rng::hash(p.seed, detail::kTagHostClass), static_cast<uint64_t>(k)).below(p.num_classes));
  // In-weights: the largest expected in-degree (links * w / W) is max_in.
  const double max_in = p.max_in_degree > 0
                            ? static_cast<double>(p.max_in_degree)
                            : std::min(10.0 * std::sqrt(static_cast<double>(links)), static_cast<double>(n - 1) / 4.0);
  std::vector<double> in_weight =
      capped_weights(n, p.seed, detail::kTagDegree, p.degree_exponent, std::max(1.0, max_in / std::max(mean, 1e-300)));
  page = std::make_unique<RangeAlias>(in_weight, host_start);
  std::vector<double> host_weight(h);
#pragma omp parallel for schedule(dynamic, 256) if (h > detail::kParallelMin)
  for (int64_t k = 0; k < h; ++k) {
    double s = 0;
    for (int64_t v = host_start[k]; v < host_start[k + 1]; ++v) s += in_weight[v];
    host_weight[k] = s;
  }
  in_weight = {};
  const int64_t all_hosts[] = {0, h};
  host = std::make_unique<RangeAlias>(host_weight, all_hosts);
  // Out-weights and the links of each source block (running sums of the
  // block totals, in block order: exact total, thread-count independent).
  const double max_out = p.max_out_degree > 0 ? static_cast<double>(p.max_out_degree)
                                              : std::min(300.0 * mean, static_cast<double>(n - 1) / 2.0);
  out_weight = capped_weights(n, p.seed, detail::kTagOutDegree, p.out_degree_exponent,
                              std::max(1.0, max_out / std::max(mean, 1e-300)));
  const int64_t nb = detail::ceil_div(n, kSourceBlock);
  std::vector<double> block_weight(nb);
#pragma omp parallel for schedule(static) if (nb > 1)
  for (int64_t b = 0; b < nb; ++b) {
    double s = 0;
    for (int64_t u = b * kSourceBlock; u < std::min(n, (b + 1) * kSourceBlock); ++u) s += out_weight[u];
    block_weight[b] = s;
  }
  double total = 0;
  for (double s : block_weight) total += s;
  block_links.assign(nb + 1, 0);
  double running = 0;
  for (int64_t b = 0; b < nb; ++b) {
    running += block_weight[b];
    block_links[b + 1] = b + 1 == nb ? links : std::min(links, static_cast<int64_t>(std::floor(
                                                                   static_cast<double>(links) * (running / total))));
  }
}

// Deals the links of source block b over its pages in proportion to their
// out-weights: page u gets ends[u - lo + 1] - ends[u - lo] links.
void block_degrees(const WebModel& m, int64_t b, int64_t n, std::vector<int64_t>& ends) {
  const int64_t lo = b * kSourceBlock, hi = std::min(n, lo + kSourceBlock);
  const int64_t links = m.block_links[b + 1] - m.block_links[b];
  double total = 0;
  for (int64_t u = lo; u < hi; ++u) total += m.out_weight[u];
  ends.assign(hi - lo + 1, 0);
  double running = 0;
  for (int64_t u = lo; u < hi; ++u) {
    running += m.out_weight[u];
    ends[u - lo + 1] = u + 1 == hi ? links
                                   : std::min(links, static_cast<int64_t>(std::floor(static_cast<double>(links) *
                                                                                     (running / total))));
  }
}

}  // namespace

GeneratedGraph generate(const WebParams& p) {
  validate(p);
  Timer timer;
  const int64_t n = p.num_vertices;
  const int64_t links = p.num_edges > 0 ? p.num_edges : std::min<int64_t>(28 * n, n * (n - 1));
  const WebModel model(p, links);
  log::debug("web graph: {} hosts (mean {:.1f} pages), model in {:.2f} s", model.hosts(),
             static_cast<double>(n) / static_cast<double>(model.hosts()), timer.seconds());
  const uint64_t edge_key = rng::hash(p.seed, detail::kTagEdges);
  auto gen_block = [&](int64_t b, auto&& emit) {
    std::vector<int64_t> ends;
    LinkSet seen;  // reused by the block's pages
    block_degrees(model, b, n, ends);
    const int64_t lo = b * kSourceBlock;
    int64_t h = model.host_of(lo);
    for (int64_t u = lo; u < lo + static_cast<int64_t>(ends.size()) - 1; ++u) {
      while (model.host_start[h + 1] <= u) ++h;
      const int64_t host_lo = model.host_start[h], host_hi = model.host_start[h + 1];
      const int64_t k = ends[u - lo + 1] - ends[u - lo];
      rng::Stream s(edge_key, static_cast<uint64_t>(u));
      seen.reset(k);
      const vid_t src = model.id(u);
      int64_t inside_links = 0;  // u links to at most host size - 1 pages of its host
      for (int64_t e = 0; e < k; ++e) {
        bool inside = s.uniform() < p.homophily && inside_links < host_hi - host_lo - 1;
        for (int draw = 0; draw < 2 * kMaxDraws; ++draw) {
          // A link inside the host that keeps hitting pages u links to
          // already goes outside instead (the host's pages are nearly used).
          if (draw == kMaxDraws) inside = false;
          int64_t t;
          if (inside) {
            t = model.page->draw(host_lo, host_hi, s);
          } else {
            const int64_t other = model.host->draw(0, model.hosts(), s);
            t = model.page->draw(model.host_start[other], model.host_start[other + 1], s);
          }
          if (t == u || !seen.insert(static_cast<vid_t>(t))) continue;
          inside_links += t >= host_lo && t < host_hi;
          emit(src, model.id(t));
          break;
        }
      }
    }
  };
  Graph g = detail::csc_from_edge_blocks(n, detail::ceil_div(n, kSourceBlock), gen_block, links, "web graph");
  const detail::TopologyScan scan = detail::sort_and_scan(g);  // neither, by construction
  g.flags.has_self_loops = scan.has_self_loops;
  g.flags.no_duplicates = !scan.has_duplicates;
  g.flags.symmetric = false;  // detect_flags (ht-convert) checks; a crawl-like digraph is not
  // Labels: the class of the page's host, written at the page's id.
  g.num_classes = p.num_classes;
  resize_for_overwrite(g.labels, static_cast<size_t>(n));
#pragma omp parallel for schedule(dynamic, 256) if (n > detail::kParallelMin)
  for (int64_t k = 0; k < model.hosts(); ++k)
    for (int64_t u = model.host_start[k]; u < model.host_start[k + 1]; ++u) g.labels[model.id(u)] = model.host_class[k];
  g.split = detail::make_split(n, p.train_fraction, p.val_fraction, p.seed);
  log::debug("web graph: {} vertices, {} links of {} drawn, {} hosts in {:.2f} s", n, g.num_edges(), links,
             model.hosts(), timer.seconds());
  // The rows find a page's class from its id through the (small) host
  // table, so they need no copy of the labels.
  auto layout = std::make_shared<const std::pair<std::vector<int64_t>, std::vector<int32_t>>>(model.host_start,
                                                                                               model.host_class);
  auto label_of = [layout, perm = model.perm, shuffle = model.shuffle](int64_t id) {
    const int64_t u = shuffle ? static_cast<int64_t>(perm.inverse(static_cast<uint64_t>(id))) : id;
    const auto& start = layout->first;
    return layout->second[std::upper_bound(start.begin(), start.end(), u) - start.begin() - 1];
  };
  return {std::move(g), detail::class_feature_rows(p.seed, p.feature_dim, p.num_classes, p.signal, p.noise, label_of)};
}

Graph web_graph(const WebParams& p) { return with_features(generate(p)); }

}  // namespace ht::gen
