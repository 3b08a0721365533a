#include "partition/ml_cluster.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

#include "core/bulk_memory.hpp"
#include "core/log.hpp"
#include "core/rng.hpp"
#include "core/timer.hpp"
#include "partition/ml_moves.hpp"
#include "partition/ml_rating.hpp"

namespace ht::ml {
namespace {

// Rounds end early once fewer than this fraction of the vertices moved.
constexpr double kSettled = 0.01;

// True when v has an edge to another vertex. Vertices of high degree are
// taken to have one without looking (one made only of self-loops stays a
// singleton, which is harmless).
template <typename G>
bool has_neighbor(const G& g, int64_t v) {
  const int64_t d = g.degree(v);
  if (d == 0) return false;
  if (d > 4) return true;
  bool any = false;
  g.for_each_neighbor(v, [&](vid_t, weight_t) { any = true; });
  return any;
}

// Vertices without neighbors can go anywhere: they are packed, in id order
// (keeps the input order's locality), into clusters up to the cap. Fixed
// blocks of ids, so the grouping is the same for every thread count.
template <typename G>
void group_isolated(const G& g, std::vector<vid_t>& label, std::vector<weight_t>& weight, weight_t cap) {
  const int64_t n = g.num_vertices();
  constexpr int64_t kBlock = int64_t{1} << 16;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < n; b += kBlock) {
    int64_t leader = -1;
    for (int64_t v = b; v < std::min(n, b + kBlock); ++v) {
      if (has_neighbor(g, v)) continue;
      const weight_t w = weight[v];
      if (leader >= 0 && weight[leader] + w <= cap) {
        label[v] = static_cast<vid_t>(leader);
        weight[leader] += w;
        weight[v] = 0;
      } else {
        leader = v;
      }
    }
  }
}

struct Scratch {
  RatingMap map;
  std::vector<std::pair<vid_t, weight_t>> buffer;
};

// The cluster v should join (kNoTarget: stay), from its neighbors' clusters
// at the start of the sub-round. Equal ratings: staying wins, then the
// cluster with the smaller priority hash (one order for all vertices of the
// round, so that tied vertices tend to pick the same cluster).
template <typename G>
Move best_cluster(const G& g, int64_t v, const std::vector<vid_t>& label, const std::vector<weight_t>& weight,
                  weight_t cap, uint64_t round_key, Scratch& scratch) {
  Move m;
  const int64_t d = g.degree(v);
  if (d == 0) return m;
  RatingMap& map = scratch.map;
  map.start(d);
  add_neighbor_labels(g, v, label, map, scratch.buffer);
  const vid_t own = label[v];
  const weight_t wv = g.vertex_weight(v);
  weight_t own_rating = 0;
  // The best cluster, first without looking at cluster weights (one more
  // cache miss per candidate on large graphs), and only if that one is full
  // again among those with room: the cap rarely binds.
  auto pick = [&](bool check_cap, weight_t& best_rating) {
    vid_t best = kNoTarget;
    uint64_t best_prio = 0;
    best_rating = 0;
    map.for_each([&](vid_t c, weight_t r) {
      if (c == own) {
        own_rating = r;
        return;
      }
      if (r < best_rating || (check_cap && weight[c] + wv > cap)) return;
      const uint64_t prio = rng::mix64(round_key ^ c);
      if (r > best_rating || best == kNoTarget || prio < best_prio) {
        best = c;
        best_rating = r;
        best_prio = prio;
      }
    });
    return best;
  };
  weight_t best_rating = 0;
  vid_t best = pick(false, best_rating);
  if (best != kNoTarget && weight[best] + wv > cap) best = pick(true, best_rating);
  map.clear();
  if (best == kNoTarget || best_rating <= own_rating) return m;
  m.v = static_cast<vid_t>(v);
  m.target = best;
  m.w = wv;
  m.gain = best_rating - own_rating;
  m.tie = rng::mix64(round_key ^ (static_cast<uint64_t>(v) << 32));
  return m;
}

}  // namespace

template <typename G>
std::vector<vid_t> cluster_vertices(const G& g, const ClusterOptions& opt, Progress& progress) {
  const int64_t n = g.num_vertices();
  std::vector<vid_t> label;
  std::vector<weight_t> weight;  // per cluster (indexed by label)
  resize_for_overwrite(label, static_cast<size_t>(n));
  resize_for_overwrite(weight, static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) {
    label[v] = static_cast<vid_t>(v);
    weight[v] = g.vertex_weight(v);
  }
  const weight_t cap = opt.max_cluster_weight;
  group_isolated(g, label, weight, cap);
  std::vector<weight_t> incoming;
  resize_for_overwrite(incoming, static_cast<size_t>(n));  // zeros
  std::vector<Move> proposals;
  MoveBuffers buffers;
  ActiveSet active(n);
  PerThread<Scratch> scratches;
  StepTimes times;
  Timer step;
  for (int round = 0; round < opt.rounds; ++round) {
    step.reset();
    const uint64_t key = rng::hash(opt.seed, 0x636C7573ULL /* "clus" */, opt.level, static_cast<uint64_t>(round));
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
            proposals[i - b] = active.active(v) ? best_cluster(g, v, label, weight, cap, key, scratch) : Move{};
          }
        }
      }
      progress.add(e - b);
      times.propose += step.seconds();
      step.reset();
      compact_moves(std::span<const Move>(proposals).first(static_cast<size_t>(e - b)), buffers);
      accept_moves(buffers, weight, cap, incoming);
      const std::span<const Move> moves = buffers.selected();
      times.select += step.seconds();
      step.reset();
#pragma omp parallel for schedule(static) if (static_cast<int64_t>(moves.size()) >= kSerialBelow)
      for (int64_t i = 0; i < static_cast<int64_t>(moves.size()); ++i) {
        const Move& m = moves[i];
        std::atomic_ref<weight_t>(weight[label[m.v]]).fetch_sub(m.w, std::memory_order_relaxed);
        std::atomic_ref<weight_t>(weight[m.target]).fetch_add(m.w, std::memory_order_relaxed);
        label[m.v] = m.target;
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
    log::debug("multilevel: level {} clustering round {}: {} moves", opt.level, round, moved);
    if (static_cast<double>(moved) < kSettled * static_cast<double>(n)) {
      progress.add(static_cast<int64_t>(opt.rounds - round - 1) * n);  // rounds not needed
      break;
    }
  }
  log::info("multilevel: level {} clustering, {} vertices: {}", opt.level, n, times.summary());
  return label;
}

template std::vector<vid_t> cluster_vertices<FineLevel>(const FineLevel&, const ClusterOptions&, Progress&);
template std::vector<vid_t> cluster_vertices<CoarseLevel>(const CoarseLevel&, const ClusterOptions&, Progress&);

}  // namespace ht::ml
