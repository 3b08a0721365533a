#pragma once
// --method multilevel: a partitioner for graphs METIS cannot take (more than
// 2^31 adjacency entries for Debian's 32-bit idx_t) or takes too long on. The
// scheme of KaMinPar and Mt-KaHyPar, on OpenMP and 64-bit offsets:
//   1. coarsen: size-constrained label propagation clusters the vertices
//      (ml_cluster), the clusters are contracted into a weighted coarse graph
//      (ml_contract); repeated until the graph is small or stops shrinking;
//   2. METIS k-way on the coarsest graph (ml_coarse_metis);
//   3. uncoarsen: the partition is projected level by level back to the
//      input, with size-constrained label-propagation refinement (and
//      rebalancing if a block is over the limit) at every level (ml_refine).
// The input level is the graph's own CSC plus its transpose when it is not
// symmetric (ml_graph): no symmetrized or 32-bit copy of the whole graph.
// Balance: every block's weight <= (1 + imbalance/1000) · total / k, METIS's
// ufactor semantics. Deterministic: the same seed and input give the same
// assignment whatever the thread count.
#include <cstdint>
#include <vector>

#include "graph/graph.hpp"
#include "partition/partition.hpp"

namespace ht {

struct MultilevelInfo {
  int levels = 0;                  // coarse levels built
  int64_t input_entries = 0;       // adjacency entries of the input level (in-lists + out-lists)
  bool transposed = false;         // the input needed its transpose (not symmetric)
  int64_t coarsest_vertices = 0;
  int64_t coarsest_entries = 0;
  double coarsen_seconds = 0;      // including the transpose
  double initial_seconds = 0;      // METIS on the coarsest level
  double refine_seconds = 0;       // projection, refinement, rebalancing
  int64_t metis_objective = 0;     // METIS's cut on the coarsest level (its edge weights)
  int64_t refinement_moves = 0;
  int64_t rebalance_moves = 0;
  int64_t max_block_weight = 0;    // the limit, in vertex weight
  int64_t process_peak_before_metis = 0;  // METIS resets the high-water mark (see MetisResult)
  bool input_clusters_given = false;  // the input level's clusters came from the caller
  int64_t input_clusters_split = 0;   // pieces cut off given clusters above the cluster cap
};

// The input level's clusters of a run (level 0 -> 1), kept for or given by
// another run: the locality chunking reuses the partitions' clusters on each
// partition instead of clustering its vertices again (chunking.hpp).
struct MultilevelClusters {
  // In: a cluster label per input vertex (any vertex id of the input, < N);
  // empty: the input level is clustered here. Clusters heavier than the cap
  // (ε_c·W/k) are cut, in id order, into pieces within it.
  std::vector<vid_t> given;
  // Out (when keep is set): the coarse vertex of level 1 of every input
  // vertex, i.e. the clusters this run contracted first.
  bool keep = false;
  std::vector<vid_t> kept;
};

// Block of every vertex (old ids), for params.parts >= 2 blocks. Vertex
// weights per params.vertex_weights (train balances the computation weight:
// one constraint).
std::vector<int32_t> multilevel_partition(const GraphView& g, const PartitionParams& params, MultilevelInfo& info,
                                          MultilevelClusters* clusters = nullptr);

}  // namespace ht
