#include "partition/multilevel_partition.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/progress.hpp"
#include "core/timer.hpp"
#include "partition/ml_cluster.hpp"
#include "partition/ml_coarse_metis.hpp"
#include "partition/ml_contract.hpp"
#include "partition/ml_graph.hpp"
#include "partition/ml_refine.hpp"

namespace ht {
namespace {

using ml::CoarseLevel;
using ml::FineLevel;
using ml::weight_t;

// Coarsening stops at about this many vertices per block: METIS then works
// on a graph it partitions in well under a second, large enough that its
// own multilevel search still has room to find a good cut.
constexpr int64_t kCoarsestPerBlock = 2000;
// ... or when a level keeps more than this fraction of the vertices and is
// small enough for METIS to take quickly; a larger one is coarsened on while
// it shrinks at all (kCreeping), so that METIS never gets a huge graph.
constexpr double kStalled = 0.9;
constexpr double kCreeping = 0.99;
constexpr int64_t kStalledEntries = int64_t{1} << 26;
constexpr int kMaxLevels = 48;
constexpr int kClusterRounds = 5;
constexpr int kRefineRounds = 4;
constexpr int kSubRounds = 8;
// The imbalance clustering and the coarsest METIS call work with at least
// (3 %, METIS's default ufactor); a tighter limit is reached while uncoarsening.
constexpr double kMinCoarseImbalance = 0.03;

struct Hierarchy {
  std::vector<CoarseLevel> levels;            // levels[i] is level i + 1
  std::vector<std::vector<vid_t>> coarse_of;  // coarse_of[i]: vertex of level i -> vertex of level i + 1
};

// The caller's clusters of the input level, with every cluster heavier than
// `cap` cut into pieces within it: members in id order, a new piece where the
// next member would not fit (labelled by its first member). Weights are
// integer sums and the cut is in id order: the same for any thread count.
std::vector<vid_t> given_clusters(const FineLevel& g, const std::vector<vid_t>& given, weight_t cap, int64_t& split) {
  const int64_t n = g.num_vertices();
  HT_CHECK(static_cast<int64_t>(given.size()) == n, "internal error: {} cluster labels for {} vertices",
           given.size(), n);
  std::vector<weight_t> cluster_weight;
  resize_for_overwrite(cluster_weight, static_cast<size_t>(n));  // zeros
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t v = 0; v < n; ++v) {
    if (static_cast<int64_t>(given[v]) >= n) {
      ++bad;
      continue;
    }
    std::atomic_ref<weight_t>(cluster_weight[given[v]]).fetch_add(g.vertex_weight(v), std::memory_order_relaxed);
  }
  HT_CHECK(bad == 0, "internal error: {} cluster labels out of range [0, {})", bad, n);
  std::vector<vid_t> label = copy_to_vector(std::span<const vid_t>(given));
  int64_t heavy = 0;
#pragma omp parallel for schedule(static) reduction(+ : heavy)
  for (int64_t c = 0; c < n; ++c) heavy += cluster_weight[c] > cap ? 1 : 0;
  split = 0;
  if (heavy == 0) return label;
  // Few (the partitions' clusters are capped k/m times higher at most, and
  // few reach it): the members of heavy clusters, found in parallel blocks,
  // then one pass over them in id order.
  constexpr int64_t kBlock = int64_t{1} << 16;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<int64_t> at(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t v = b * kBlock; v < std::min(n, (b + 1) * kBlock); ++v) at[b + 1] += cluster_weight[given[v]] > cap;
  for (int64_t b = 0; b < blocks; ++b) at[b + 1] += at[b];
  std::vector<vid_t> members(static_cast<size_t>(at[blocks]));
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t i = at[b];
    for (int64_t v = b * kBlock; v < std::min(n, (b + 1) * kBlock); ++v)
      if (cluster_weight[given[v]] > cap) members[i++] = static_cast<vid_t>(v);
  }
  constexpr vid_t kNone = ~vid_t{0};
  std::unordered_map<vid_t, std::pair<vid_t, weight_t>> open;  // heavy cluster -> (piece, filled)
  open.reserve(static_cast<size_t>(heavy));
  for (const vid_t v : members) {
    const vid_t c = given[v];
    auto [it, fresh] = open.try_emplace(c, kNone, 0);
    vid_t& piece = it->second.first;
    weight_t& filled = it->second.second;
    const weight_t w = g.vertex_weight(v);
    if (piece == kNone || filled + w > cap) {
      if (piece != kNone) ++split;
      piece = v;
      filled = 0;
    }
    filled += w;
    label[v] = piece;
  }
  return label;
}

// One level of coarsening: clustering (or the caller's clusters, `given`
// non-null, for the input level) and contraction, each timed at -v.
template <typename G>
void coarsen_once(const G& g, weight_t cap, const PartitionParams& params, Hierarchy& h,
                  std::vector<vid_t>* given = nullptr) {
  Timer t;
  const int level = static_cast<int>(h.levels.size());
  ml::ClusterOptions opt;
  opt.max_cluster_weight = cap;
  opt.rounds = kClusterRounds;
  opt.sub_rounds = kSubRounds;
  opt.seed = params.seed;
  opt.level = static_cast<uint64_t>(level);
  std::vector<vid_t> label;
  if (given != nullptr) {
    label = std::move(*given);
  } else {
    Progress progress(fmt::format("multilevel: clustering level {}", level), kClusterRounds * g.num_vertices(),
                      "vertices");
    label = ml::cluster_vertices(g, opt, progress);
    progress.finish();
  }
  const double cluster_seconds = t.seconds();
  CoarseLevel coarse;
  {
    Progress progress(fmt::format("multilevel: contracting level {}", level), g.adjacency_entries(),
                      "adjacency entries");
    coarse = ml::contract(g, label, progress);
    progress.finish();
  }
  log::info("multilevel: level {} -> {}: {} -> {} vertices, {} -> {} adjacency entries ({:.2f} s: {} {:.2f} s, "
            "contraction {:.2f} s)",
            level, level + 1, g.num_vertices(), coarse.num_vertices(), g.adjacency_entries(),
            coarse.adjacency_entries(), t.seconds(), given != nullptr ? "given clusters" : "clustering",
            cluster_seconds, t.seconds() - cluster_seconds);
  h.levels.push_back(std::move(coarse));
  h.coarse_of.push_back(std::move(label));
}

// Projects `part` (of the level above g) onto g, then rebalances and refines
// within opt.max_block_weight. An empty `coarse_of`: `part` is already g's.
template <typename G>
void uncoarsen_once(const G& g, const std::vector<vid_t>& coarse_of, std::vector<int32_t>& part,
                    std::vector<weight_t>& weights, ml::RefineOptions opt, int level, MultilevelInfo& info) {
  Timer t;
  if (!coarse_of.empty()) {
    std::vector<int32_t> fine_part;
    resize_for_overwrite(fine_part, coarse_of.size());
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < static_cast<int64_t>(coarse_of.size()); ++v) fine_part[v] = part[coarse_of[v]];
    part = std::move(fine_part);
    if (log::enabled(log::Level::debug))
      log::debug("multilevel: level {} projected cut weight {}", level, ml::cut_weight(g, part));
  }
  opt.level = static_cast<uint64_t>(level);
  info.rebalance_moves += ml::rebalance_partition(g, part, weights, opt);
  int64_t moves = 0;
  {
    Progress progress(fmt::format("multilevel: refining level {}", level), opt.rounds * g.num_vertices(), "vertices");
    moves = ml::refine_partition(g, part, weights, opt, progress);
    progress.finish();
  }
  info.refinement_moves += moves;
  log::info("multilevel: level {}: {} vertices, block limit {}, {} refinement moves ({:.2f} s)", level,
            g.num_vertices(), opt.max_block_weight, moves, t.seconds());
  if (log::enabled(log::Level::debug))
    log::debug("multilevel: level {} cut weight {}", level, ml::cut_weight(g, part));
}

}  // namespace

std::vector<int32_t> multilevel_partition(const GraphView& g, const PartitionParams& params, MultilevelInfo& info,
                                          MultilevelClusters* clusters) {
  const int k = params.parts;
  HT_CHECK(k >= 2, "the multilevel partitioner needs at least 2 parts (got {})", k);
  HT_CHECK(g.num_vertices >= k, "{} parts for a graph of {} vertices", k, g.num_vertices);
  Timer t;
  const FineLevel fine(g, params);
  info.input_entries = fine.adjacency_entries();
  info.transposed = fine.uses_transpose();
  if (info.transposed) log::info("multilevel: transpose of {} edges: {:.2f} s", g.num_edges, t.seconds());
  weight_t total = 0, heaviest = 0;
  ml::total_and_max_weight(fine, total, heaviest);
  const double eps = params.imbalance / 1000.0;
  // Clusters up to eps_c·W/k: any set of them can be packed into k blocks
  // within eps_c, so the coarse graphs stay balanced-partitionable (and, with
  // eps_c at most 1, keep at least k vertices). A tighter --imbalance is not
  // used for clustering: clusters capped that small fill up and then take
  // whatever neighbors still fit, which ruins the coarse graphs (ufactor 1
  // gave twice METIS's cut); blocks are brought within the real limit by
  // rebalancing during uncoarsening, where vertices get light enough.
  const double eps_c = std::clamp(eps, kMinCoarseImbalance, 1.0);
  const weight_t cap = std::max<weight_t>(1, static_cast<weight_t>(eps_c * static_cast<double>(total) / k));
  // Block weight limit for an imbalance e: METIS's ufactor semantics.
  auto limit_for = [&](double e) {
    return std::max<weight_t>(static_cast<weight_t>(std::floor((1 + e) * static_cast<double>(total) / k)),
                              (total + k - 1) / k);
  };
  const weight_t limit = limit_for(eps);
  info.max_block_weight = limit;
  const int64_t target = kCoarsestPerBlock * k;
  log::info("multilevel: {} vertices, {} adjacency entries ({}), total vertex weight {} (heaviest vertex {}), "
            "cluster cap {}, block limit {}, coarsest target {} vertices",
            g.num_vertices, info.input_entries, info.transposed ? "in- and out-lists" : "symmetric: in-lists only",
            total, heaviest, cap, limit, target);

  Hierarchy h;
  if (clusters != nullptr && !clusters->given.empty()) {
    std::vector<vid_t> label = given_clusters(fine, clusters->given, cap, info.input_clusters_split);
    info.input_clusters_given = true;
    if (info.input_clusters_split > 0)
      log::info("multilevel: {} pieces cut off given clusters above the cap {}", info.input_clusters_split, cap);
    coarsen_once(fine, cap, params, h, &label);
  } else {
    coarsen_once(fine, cap, params, h);
  }
  if (clusters != nullptr && clusters->keep) clusters->kept = copy_to_vector(std::span<const vid_t>(h.coarse_of.front()));
  while (static_cast<int>(h.levels.size()) < kMaxLevels) {
    const int64_t n = h.levels.back().num_vertices();
    const int64_t before = h.levels.size() == 1 ? g.num_vertices : h.levels[h.levels.size() - 2].num_vertices();
    const double kept = static_cast<double>(n) / static_cast<double>(before);
    if (n <= target || kept > kCreeping || (kept > kStalled && h.levels.back().adjacency_entries() <= kStalledEntries))
      break;
    const CoarseLevel& last = h.levels.back();
    coarsen_once(last, cap, params, h);
  }
  info.levels = static_cast<int>(h.levels.size());
  info.coarsest_vertices = h.levels.back().num_vertices();
  info.coarsest_entries = h.levels.back().adjacency_entries();
  info.coarsen_seconds = t.seconds();

  t.reset();
  PartitionParams coarse_params = params;
  coarse_params.imbalance = std::max(params.imbalance, static_cast<int>(kMinCoarseImbalance * 1000));
  MetisResult r = ml::partition_coarsest(h.levels.back(), coarse_params);
  info.initial_seconds = t.seconds();
  info.metis_objective = r.objective_value;
  info.process_peak_before_metis = r.process_peak_before;
  std::vector<int32_t> part = std::move(r.part_of);

  t.reset();
  // With a tighter --imbalance than eps_c, refinement works within eps_c up
  // to the input level, and only there are blocks brought within the real
  // limit. Label propagation moves a vertex only into a block with room, so
  // under a tight limit it could not repair what the coarse levels got wrong
  // (ufactor 1 gave twice METIS's cut); rebalancing single input vertices,
  // boundary ones first, costs little cut.
  const weight_t relaxed = limit_for(eps_c);
  ml::RefineOptions opt;
  opt.k = k;
  opt.max_block_weight = relaxed;
  opt.rounds = kRefineRounds;
  opt.sub_rounds = kSubRounds;
  opt.seed = params.seed;
  std::vector<weight_t> weights = ml::block_weights(h.levels.back(), part, k);
  {
    const CoarseLevel& coarsest = h.levels.back();
    if (log::enabled(log::Level::debug))
      log::debug("multilevel: coarsest cut weight {}", ml::cut_weight(coarsest, part));
    opt.level = static_cast<uint64_t>(h.levels.size());
    info.rebalance_moves += ml::rebalance_partition(coarsest, part, weights, opt);
    Progress progress("multilevel: refining the coarsest level", opt.rounds * coarsest.num_vertices(), "vertices");
    info.refinement_moves += ml::refine_partition(coarsest, part, weights, opt, progress);
    progress.finish();
  }
  // Projection keeps block weights: they are carried down.
  for (int level = static_cast<int>(h.levels.size()) - 1; level >= 0; --level) {
    const std::vector<vid_t> coarse_of = std::move(h.coarse_of[level]);
    h.coarse_of.pop_back();
    h.levels.pop_back();  // level + 1 is no longer needed
    if (level == 0)
      uncoarsen_once(fine, coarse_of, part, weights, opt, level, info);
    else
      uncoarsen_once(h.levels.back(), coarse_of, part, weights, opt, level, info);
  }
  if (relaxed > limit) {
    opt.max_block_weight = limit;
    uncoarsen_once(fine, {}, part, weights, opt, 0, info);
  }
  const weight_t heaviest_block = *std::max_element(weights.begin(), weights.end());
  if (heaviest_block > limit)
    log::warn("multilevel: the heaviest block weighs {}, above the limit {} (vertices too heavy to move)",
              heaviest_block, limit);
  info.refine_seconds = t.seconds();
  log::info("multilevel: {} levels, coarsest {} vertices / {} entries; coarsen {:.2f} s, METIS {:.2f} s, refine "
            "{:.2f} s; {} refinement and {} rebalancing moves",
            info.levels, info.coarsest_vertices, info.coarsest_entries, info.coarsen_seconds, info.initial_seconds,
            info.refine_seconds, info.refinement_moves, info.rebalance_moves);
  return part;
}

}  // namespace ht
