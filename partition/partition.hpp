#pragma once
// Two-level partition (SPEC §4): m partitions (one per GPU), each split into n
// chunks of contiguous destination ranges. Vertices are renumbered so that
// each partition and each chunk is a contiguous range of NEW ids.
//
// Id spaces: "old" ids are the graph file's vertex ids (0..N-1); "new" ids are
// positions after renumbering. The graph file's own `orig_ids` section (if
// any) maps old ids further back to the raw input's ids.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/container.hpp"
#include "graph/graph.hpp"

namespace ht {

// `automatic` (--method auto) is resolved before partitioning (method_choice.hpp):
// a partition records the method that ran, never `automatic`.
enum class PartitionMethod { metis, random, range, multilevel, automatic };
enum class MetisObjective { cut, vol };
enum class VertexWeights { none, degree, train };
enum class MetisAlgorithm { kway, recursive };
// How each partition is cut into its n chunks (chunking.hpp):
// balanced: n contiguous ranges of the partition's vertices in their old
//   relative order, balanced on computation weight (the paper's §4.1);
// locality: the chunks are the blocks of a METIS or multilevel partition of
//   the partition's induced subgraph into n parts (balanced on the same
//   computation weight), so a chunk's in-neighbors overlap its own vertices;
// automatic (--chunking auto) resolves per run and partition: locality for
//   --method auto, metis and multilevel, kept for a partition only where its
//   chunks read fewer neighbor rows (Σ_j |N_ij|) than the balanced ranges;
//   balanced for range and random. A partition records balanced or locality,
//   never automatic. The codes are the partition file's (0 in files from
//   before the option: their chunks are balanced ranges).
enum class ChunkingMode { balanced, locality, automatic };

// Where the multilevel partitioner's locality chunks (m >= 2) start their
// coarsening: reuse = from the partitions' run's input-level clusters,
// restricted to each partition (no second clustering of the input level);
// fresh = a whole multilevel run on each partition's subgraph (before issue
// 33). Only multilevel chunks of a multilevel partition reuse; not recorded
// in the partition file (it changes the chunks, never their validity).
enum class ChunkClusters { reuse, fresh };

struct PartitionParams {
  int parts = 1;            // m
  int chunks = 1;           // n (per partition)
  uint64_t seed = 1;
  int imbalance = 30;       // METIS ufactor: allowed imbalance in 1/1000 (30 = 3%)
  PartitionMethod method = PartitionMethod::metis;  // ht-partition's default is automatic
  MetisObjective objective = MetisObjective::cut;
  MetisAlgorithm algorithm = MetisAlgorithm::kway;
  VertexWeights vertex_weights = VertexWeights::degree;
  // Chunk balancing weight of one vertex relative to one in-edge (docs/FORMATS.md).
  double chunk_vertex_weight = 1.0;
  // ht-partition's default is automatic; a partition made by hand (tests) or
  // by ht-train without --partition has the paper's ranges.
  ChunkingMode chunking = ChunkingMode::balanced;
  ChunkClusters chunk_clusters = ChunkClusters::reuse;
};

struct Partition {
  PartitionParams params;
  FileIdentity graph_identity;       // of the graph file it was made from
  int64_t num_vertices = 0;
  int64_t num_edges = 0;
  std::vector<vid_t> new_to_old;     // N
  std::vector<vid_t> old_to_new;     // N
  std::vector<int64_t> part_offsets;   // m + 1, new ids
  std::vector<int64_t> chunk_offsets;  // m*n + 1, new ids; chunk (i, j) is index i*n + j

  int m() const { return params.parts; }
  int n() const { return params.chunks; }
  int64_t chunk_begin(int i, int j) const { return chunk_offsets[static_cast<size_t>(i) * n() + j]; }
  int64_t chunk_end(int i, int j) const { return chunk_offsets[static_cast<size_t>(i) * n() + j + 1]; }
  int owner(vid_t new_id) const;  // partition of a new id (binary search)
};

// Graph in new ids: CSC rows permuted, source ids mapped, vertex data
// permuted, orig_ids composed (new id -> raw input id). Self-loops and
// duplicates are kept as they are in the input.
Graph renumber(const GraphView& g, const Partition& p);
// The vertices' data alone in new ids (labels, split, orig_ids composed; no
// features, no topology: offsets and sources empty), for a trainer whose
// plan carries the topology.
Graph renumber_vertices(const GraphView& g, const Partition& p);
// True when every vertex keeps its id (one part and one chunk of a range
// partition: ht-train's in-memory runs of small graphs).
bool keeps_ids(const Partition& p);
// values[new_to_old[v]] for every new id v.
std::vector<float> in_new_ids(std::span<const float> values, const Partition& p);

}  // namespace ht
