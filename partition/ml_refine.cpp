#include "partition/ml_refine.hpp"

#include <parallel/algorithm>

#include <algorithm>
#include <atomic>
#include <limits>
#include <utility>

#include "core/bulk_memory.hpp"
#include "core/log.hpp"
#include "core/rng.hpp"
#include "core/timer.hpp"
#include "partition/ml_moves.hpp"
#include "partition/ml_rating.hpp"

namespace ht::ml {
namespace {

constexpr int64_t kGrain = 1024;
// Rounds end early once fewer than this fraction of the vertices moved.
constexpr double kSettled = 0.001;

uint64_t tie_of(uint64_t key, int64_t v) { return rng::mix64(key ^ (static_cast<uint64_t>(v) << 32)); }

// Fills `conn` with v's edge weight into each block (`block`: the block of
// every vertex, as int32_t or narrower); false when v has no neighbor
// outside its own block `own` (nothing to gain by moving it).
template <typename G, typename Blocks>
bool connections(const G& g, int64_t v, const Blocks& block, int32_t own, BlockRatings& conn,
                 std::vector<std::pair<vid_t, weight_t>>& buffer) {
  add_neighbor_labels(g, v, block, conn, buffer);
  for (int32_t b : conn.touched())
    if (b != own) return true;
  return false;
}

// The best block with room for v other than its own: most connected, then
// lightest, then lowest id; -1 when no connected block has room.
int32_t best_block(const BlockRatings& conn, int32_t own, weight_t wv, const std::vector<weight_t>& weights,
                   weight_t limit) {
  int32_t best = -1;
  for (int32_t b : conn.touched()) {
    if (b == own || weights[b] + wv > limit) continue;
    if (best < 0 || conn[b] > conn[best] || (conn[b] == conn[best] && (weights[b] < weights[best] ||
                                                                        (weights[b] == weights[best] && b < best))))
      best = b;
  }
  return best;
}

template <typename G, typename Blocks>
Move refinement_move(const G& g, int64_t v, const Blocks& block, int32_t own, const std::vector<weight_t>& weights,
                     weight_t limit, uint64_t key, BlockRatings& conn,
                     std::vector<std::pair<vid_t, weight_t>>& buffer) {
  Move m;
  if (g.degree(v) == 0) return m;
  if (connections(g, v, block, own, conn, buffer)) {
    const weight_t wv = g.vertex_weight(v);
    const int32_t best = best_block(conn, own, wv, weights, limit);
    if (best >= 0 && conn[best] > conn[own]) {
      m.v = static_cast<vid_t>(v);
      m.target = static_cast<vid_t>(best);
      m.w = wv;
      m.gain = conn[best] - conn[own];
      m.tie = tie_of(key, v);
    }
  }
  conn.clear();
  return m;
}

// A rebalancing candidate: v leaves its overloaded block for `target`,
// losing `loss` cut weight (negative: gaining).
struct Candidate {
  double loss_per_weight;
  uint64_t tie;
  vid_t v;
  int32_t target;
  bool operator<(const Candidate& o) const {
    if (loss_per_weight != o.loss_per_weight) return loss_per_weight < o.loss_per_weight;
    if (tie != o.tie) return tie < o.tie;
    return v < o.v;
  }
};

int32_t lightest_block(const std::vector<weight_t>& weights) {
  return static_cast<int32_t>(std::min_element(weights.begin(), weights.end()) - weights.begin());
}

}  // namespace

template <typename G>
std::vector<weight_t> block_weights(const G& g, const std::vector<int32_t>& part, int k) {
  std::vector<weight_t> w(static_cast<size_t>(k), 0);
  const int64_t n = g.num_vertices();
#pragma omp parallel
  {
    std::vector<weight_t> local(static_cast<size_t>(k), 0);
#pragma omp for schedule(static) nowait
    for (int64_t v = 0; v < n; ++v) local[part[v]] += g.vertex_weight(v);
#pragma omp critical
    for (int b = 0; b < k; ++b) w[b] += local[b];  // integer sums: order-free
  }
  return w;
}

template <typename G>
int64_t refine_partition(const G& g, std::vector<int32_t>& part, std::vector<weight_t>& weights,
                         const RefineOptions& opt, Progress& progress) {
  const int64_t n = g.num_vertices();
  std::vector<weight_t> incoming(static_cast<size_t>(opt.k), 0);
  std::vector<Move> proposals;
  MoveBuffers buffers;
  ActiveSet active(n);
  struct Scratch {
    explicit Scratch(int k) : conn(k) {}
    BlockRatings conn;
    std::vector<std::pair<vid_t, weight_t>> buffer;
  };
  PerThread<Scratch> scratches(opt.k);
  // The blocks as bytes where k allows, read by the proposals: a quarter of
  // the cache footprint of the int32_t blocks, whose loads (one per
  // adjacency entry, at random) are what an input level's refinement waits
  // for. The same values: the same moves.
  const bool narrow = opt.k <= 256;
  std::vector<uint8_t> part8;
  if (narrow) {
    resize_for_overwrite(part8, static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < n; ++v) part8[v] = static_cast<uint8_t>(part[v]);
  }
  StepTimes times;
  Timer step;
  int64_t total = 0;
  for (int round = 0; round < opt.rounds; ++round) {
    step.reset();
    const uint64_t key = rng::hash(opt.seed, 0x726566ULL /* "ref" */, opt.level, static_cast<uint64_t>(round));
    const SubRounds sr = make_sub_rounds(n, opt.sub_rounds, opt.seed, key);
    times.setup += step.seconds();
    ++times.rounds;
    int64_t moved = 0;
    for (int s = 0; s < opt.sub_rounds; ++s) {
      step.reset();
      ++times.sub_rounds;
      const int64_t b = sr.begin[s], e = sr.begin[s + 1];
      // Every entry is written below (inactive vertices propose nothing).
      if (proposals.size() < static_cast<size_t>(e - b)) resize_for_overwrite(proposals, static_cast<size_t>(e - b));
      const std::span<const vid_t> sub_round(sr.order.data() + b, static_cast<size_t>(e - b));
      const int threads = active.proposal_threads(g, sub_round);
#pragma omp parallel num_threads(threads) if (threads > 1)
      {
        Scratch& scratch = scratches.local();
        const int64_t grain = proposal_grain(e - b);
#pragma omp for schedule(dynamic, 1)
        for (int64_t i0 = b; i0 < e; i0 += grain) {
          for (int64_t i = i0; i < std::min(e, i0 + grain); ++i) {
            const vid_t v = sr.order[i];
            if (!active.active(v))
              proposals[i - b] = Move{};
            else if (narrow)
              proposals[i - b] = refinement_move(g, v, part8, part[v], weights, opt.max_block_weight, key,
                                                 scratch.conn, scratch.buffer);
            else
              proposals[i - b] = refinement_move(g, v, part, part[v], weights, opt.max_block_weight, key,
                                                 scratch.conn, scratch.buffer);
          }
        }
      }
      progress.add(e - b);
      times.propose += step.seconds();
      step.reset();
      compact_moves(std::span<const Move>(proposals).first(static_cast<size_t>(e - b)), buffers);
      accept_moves(buffers, weights, opt.max_block_weight, incoming);
      const std::span<const Move> moves = buffers.selected();
      times.select += step.seconds();
      step.reset();
#pragma omp parallel for schedule(static) if (static_cast<int64_t>(moves.size()) >= kSerialBelow)
      for (int64_t i = 0; i < static_cast<int64_t>(moves.size()); ++i) {
        const Move& m = moves[i];
        std::atomic_ref<weight_t>(weights[part[m.v]]).fetch_sub(m.w, std::memory_order_relaxed);
        std::atomic_ref<weight_t>(weights[m.target]).fetch_add(m.w, std::memory_order_relaxed);
        part[m.v] = static_cast<int32_t>(m.target);
        if (narrow) part8[m.v] = static_cast<uint8_t>(m.target);
      }
      times.apply += step.seconds();
      step.reset();
      active.mark_neighbors(g, moves);
      moved += static_cast<int64_t>(moves.size());
      times.mark += step.seconds();
    }
    step.reset();
    active.next_round(g);
    times.setup += step.seconds();
    total += moved;
    log::debug("multilevel: level {} refinement round {}: {} moves", opt.level, round, moved);
    if (static_cast<double>(moved) < kSettled * static_cast<double>(n)) {
      progress.add(static_cast<int64_t>(opt.rounds - round - 1) * n);
      break;
    }
  }
  log::info("multilevel: level {} refinement, {} vertices: {}", opt.level, n, times.summary());
  return total;
}

template <typename G>
int64_t rebalance_partition(const G& g, std::vector<int32_t>& part, std::vector<weight_t>& weights,
                            const RefineOptions& opt) {
  const weight_t limit = opt.max_block_weight;
  const int64_t n = g.num_vertices();
  const uint64_t key = rng::hash(opt.seed, 0x62616CULL /* "bal" */, opt.level);
  int64_t moved = 0;
  // A few passes: candidates skipped for want of room may fit after others
  // moved. Each pass is a sorted sweep, so the result is deterministic.
  for (int pass = 0; pass < 4; ++pass) {
    if (*std::max_element(weights.begin(), weights.end()) <= limit) break;
    std::vector<uint8_t> over(static_cast<size_t>(opt.k));
    for (int b = 0; b < opt.k; ++b) over[b] = weights[b] > limit ? 1 : 0;
    const int32_t lightest = lightest_block(weights);
    std::vector<Candidate> cand;
#pragma omp parallel
    {
      BlockRatings conn(opt.k);
      std::vector<std::pair<vid_t, weight_t>> buffer;
      std::vector<Candidate> local;
#pragma omp for schedule(dynamic, kGrain) nowait
      for (int64_t v = 0; v < n; ++v) {
        if (!over[part[v]]) continue;
        const weight_t wv = g.vertex_weight(v);
        const int32_t own = part[v];
        connections(g, v, part, own, conn, buffer);
        int32_t t = best_block(conn, own, wv, weights, limit);
        if (t < 0 && lightest != own && weights[lightest] + wv <= limit) t = lightest;
        if (t >= 0) {
          const double loss = static_cast<double>(conn[own] - conn[t]);
          local.push_back(Candidate{loss / static_cast<double>(wv), tie_of(key, v), static_cast<vid_t>(v), t});
        }
        conn.clear();
      }
#pragma omp critical
      cand.insert(cand.end(), local.begin(), local.end());
    }
    // Unique keys: the sorted order is the same whatever order threads
    // appended in.
    __gnu_parallel::sort(cand.begin(), cand.end());
    int64_t pass_moves = 0;
    for (const Candidate& c : cand) {
      const int32_t own = part[c.v];
      const weight_t wv = g.vertex_weight(c.v);
      if (weights[own] <= limit || weights[c.target] + wv > limit) continue;
      weights[own] -= wv;
      weights[c.target] += wv;
      part[c.v] = c.target;
      ++pass_moves;
    }
    moved += pass_moves;
    if (pass_moves == 0) break;
  }
  return moved;
}

template <typename G>
weight_t cut_weight(const G& g, const std::vector<int32_t>& part) {
  weight_t cut = 0;
  const int64_t n = g.num_vertices();
#pragma omp parallel for schedule(dynamic, kGrain) reduction(+ : cut)
  for (int64_t v = 0; v < n; ++v)
    g.for_each_neighbor(v, [&](vid_t u, weight_t w) { cut += part[u] != part[v] ? w : 0; });
  return cut;
}

template std::vector<weight_t> block_weights<FineLevel>(const FineLevel&, const std::vector<int32_t>&, int);
template std::vector<weight_t> block_weights<CoarseLevel>(const CoarseLevel&, const std::vector<int32_t>&, int);
template int64_t refine_partition<FineLevel>(const FineLevel&, std::vector<int32_t>&, std::vector<weight_t>&,
                                             const RefineOptions&, Progress&);
template int64_t refine_partition<CoarseLevel>(const CoarseLevel&, std::vector<int32_t>&, std::vector<weight_t>&,
                                               const RefineOptions&, Progress&);
template int64_t rebalance_partition<FineLevel>(const FineLevel&, std::vector<int32_t>&, std::vector<weight_t>&,
                                                const RefineOptions&);
template int64_t rebalance_partition<CoarseLevel>(const CoarseLevel&, std::vector<int32_t>&, std::vector<weight_t>&,
                                                  const RefineOptions&);
template weight_t cut_weight<FineLevel>(const FineLevel&, const std::vector<int32_t>&);
template weight_t cut_weight<CoarseLevel>(const CoarseLevel&, const std::vector<int32_t>&);

}  // namespace ht::ml
