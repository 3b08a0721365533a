#pragma once
// Chunking of every partition into its n chunks (SPEC §4, paper §4.1), after
// the renumbering has made each partition a contiguous range of new ids:
//   - balanced ranges: n contiguous ranges of the partition in
//     its old relative order, balanced on computation weight. As good as the
//     input order's locality: on a graph with shuffled ids every chunk reads
//     nearly every vertex (α 11.6 over 16 chunks on the 41 M-vertex web graph
//     of issue 20);
//   - locality: the n blocks of a METIS or multilevel partition of the
//     partition's induced subgraph, balanced on the same computation weight
//     (in-edges, all of them, + C per vertex) within --imbalance, then
//     renumbered so that each block is a contiguous range of new ids (block
//     order, old relative order inside a block): most of a chunk's in-edges
//     come from its own vertices, so the chunks' neighbor sets overlap less;
//   - auto: locality where it reads fewer neighbor rows, per partition.
// With m = 1 the induced subgraph is the graph itself (no copy); with m >= 2
// the partitions are cut one after the other (a hierarchical scheme: the m
// partitions first, then each into n), each from a copy of its in-edges in
// local ids where an in-edge from another partition becomes a self-loop:
// partitioners skip self-loops, so they do not change the cut, but they keep
// the in-degree, so a vertex weighs its whole computation weight.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "partition/partition.hpp"

namespace ht {

struct PartitionRunInfo;

// A partition with fewer vertices than this per chunk keeps balanced ranges:
// blocks of a handful of vertices have no locality to find, and partitioners
// may leave blocks empty there.
inline constexpr int64_t kLocalityMinVerticesPerChunk = 4;

// How one partition was cut into chunks.
struct PartChunking {
  bool locality = false;          // chunks are the blocks of a partition (else balanced ranges)
  bool partitioned = false;       // a partitioner ran for this partition
  bool reused_clusters = false;   // multilevel, from the partitions' input-level clusters (ChunkClusters::reuse)
  PartitionMethod method = PartitionMethod::metis;  // that partitioner
  std::string method_reason;      // why --method auto picked it (empty when it was given)
  int64_t rows_balanced = -1;     // Σ_j |N_ij| of the balanced ranges (-1: not counted)
  int64_t rows_locality = -1;     // Σ_j |N_ij| of the blocks (-1: not counted)
  int64_t vertices_moved = 0;     // moved into blocks the partitioner left empty
  std::string note;               // why a partition kept its balanced ranges, if not by count
};

struct ChunkingInfo {
  ChunkingMode requested = ChunkingMode::balanced;
  ChunkingMode ran = ChunkingMode::balanced;  // locality when any partition's chunks are blocks
  std::vector<PartChunking> parts;            // m (empty when n = 1: nothing to cut)
  double partition_seconds = 0;               // the partitioner runs of m >= 2 (m = 1: its own phases)
  double count_seconds = 0;                   // counting neighbor rows (auto)
};

// The chunking that runs for `params` (method resolved): `automatic` is
// locality for metis and multilevel (what --method auto resolves to) and
// balanced for range and random (which keep the input order, or are the
// no-structure baseline).
ChunkingMode resolve_chunking(const PartitionParams& params);

// Fills p.chunk_offsets; with locality also reorders p.new_to_old and
// p.old_to_new inside each partition (partitions keep their ranges). Needs
// p's renumbering and part_offsets, every partition with >= n vertices.
// `requested_method`: --method as given (auto: each partition's partitioner
// is picked by method_choice.hpp from its size; metis or multilevel: that
// one; range or random with --chunking locality: picked as for auto).
// Records phases in `run`: with m = 1 those of the partitioner (as an
// assignment's: symmetrize and metis, or multilevel, and its figures), with
// m >= 2 "chunk_partition"; then "chunk" for the rest. Deterministic for any
// thread count.
void make_chunks(const GraphView& g, Partition& p, PartitionMethod requested_method, PartitionRunInfo& run);

// Σ over the chunks of the distinct in-neighbors (|N_ij|) when the vertices
// `olds` (old ids) are cut at `cut` (cut.size() - 1 chunks, offsets into
// olds). For tests and for --chunking auto.
int64_t neighbor_rows(const GraphView& g, const std::vector<vid_t>& olds, const std::vector<int64_t>& cut);

}  // namespace ht
