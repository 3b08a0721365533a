#pragma once
// Quality of a partition: sizes of every partition and chunk, edge cut,
// balance, and the neighbor replication factor α (paper Table 3).
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "graph/graph.hpp"
#include "partition/partition.hpp"

namespace ht {

struct ChunkStats {
  int part = 0, chunk = 0;
  int64_t vertices = 0;      // |V_ij|: destinations
  int64_t in_edges = 0;      // |E_ij|: all in-edges of the destinations
  int64_t in_neighbors = 0;  // |N_ij|: distinct sources of those in-edges
  int64_t cut_in_edges = 0;  // in-edges whose source lies outside the chunk
  double weight = 0;         // computation weight: in_edges + vertices · chunk_vertex_weight
};

struct PartStats {
  int64_t vertices = 0, in_edges = 0;
  int64_t in_neighbors = 0;  // |N_i|: distinct sources of the partition's in-edges
  int64_t cut_in_edges = 0;  // in-edges whose source lies in another partition
  double weight = 0;
};

struct PartitionStats {
  int64_t num_vertices = 0, num_edges = 0;
  std::vector<PartStats> parts;    // m
  std::vector<ChunkStats> chunks;  // m·n, index i·n + j
  int64_t edge_cut = 0;            // directed input edges whose ends lie in different partitions
  double edge_cut_fraction = 0;    // edge_cut / E
  int64_t chunk_edge_cut = 0;      // directed input edges whose ends lie in different chunks (>= edge_cut)
  double chunk_edge_cut_fraction = 0;  // chunk_edge_cut / E
  double alpha = 0;                // Σ_ij |N_ij| / N over the m·n chunks (Table 3)
  double alpha_parts = 0;          // Σ_i |N_i| / N over the m partitions
  double imbalance = 1;            // max / mean of the partitions' computation weight
  double vertex_imbalance = 1;     // max / mean of the partitions' vertex counts
  double edge_imbalance = 1;       // max / mean of the partitions' in-edge counts
  double chunk_imbalance = 1;      // max / mean of the computation weight over all m·n chunks
};

// How the distinct in-neighbors are counted. masks: one parallel pass over
// all edges with a bit set of the m·n chunks per source (8·ceil(m·n/64)
// bytes per vertex); markers: chunks and partitions one per thread, each with
// an N-sized marker array (parallel only over the m·n chunks and then the m
// partitions). automatic: masks when they fit 2 GiB. Both give the same
// statistics (tested); the choice is for speed and memory only.
enum class StatsMethod { automatic, masks, markers };

// Computed on the input graph (old ids) and the partition; O(E) time.
PartitionStats compute_partition_stats(const GraphView& g, const Partition& p,
                                       StatsMethod method = StatsMethod::automatic);

// Readable table: one row per chunk plus a total row per partition, or, when
// m·n exceeds `max_chunk_rows`, one row per partition with the min/max of its
// chunks; then the summary lines.
std::string format_partition_stats(const PartitionStats& s, int chunks_per_part, int max_chunk_rows = 64);

// Writes the statistics' keys into an open JSON object (docs/PARTITION.md).
void write_partition_stats_json(JsonWriter& w, const PartitionStats& s);

}  // namespace ht
