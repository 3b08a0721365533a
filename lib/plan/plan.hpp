#pragma once
// The deduplicated communication plan (SPEC §5, paper §5.2 and §6), built by
// ht-reorganize and executed by the training engine. All ids are NEW ids of
// the partition. One plan serves the three comm modes:
//   baseline: gather every row of N_ij from host into the chunk's neighbor
//             buffer; topology = src_local.
//   p2p:      load all of 𝕅_ij from host into its transition slots, pull the
//             remote rows of N_ij from their owners; topology = src_merged.
//   full:     as p2p, but rows with reused=1 stay in their slot from batch j-1
//             and are not loaded.
// A plan file stores nbr, offsets and src_local of each step; the other lists
// follow from them and are derived when it is read (plan_derive.hpp).
// The in-memory Plan always has every list.
#include <cstdint>
#include <string>
#include <vector>

#include "core/container.hpp"
#include "core/names.hpp"
#include "graph/types.hpp"

namespace ht {

enum class CommMode { baseline, p2p, full };

// "baseline", "p2p", "full": ht-train --comm, the log and the metrics file.
const NameTable<CommMode>& comm_mode_names();
std::string name_of(CommMode mode);

// What GPU i does in batch j.
struct ChunkPlan {
  int32_t part = 0;   // i (the GPU)
  int32_t chunk = 0;  // the partitioner's chunk index j' within partition i
  int64_t dst_begin = 0, dst_end = 0;  // V_ij = [dst_begin, dst_end), new ids

  // N_ij: in-neighbors of V_ij, ascending new ids. Every destination is
  // included (the engine's models add a self-loop to every vertex).
  std::vector<vid_t> nbr;
  // Chunk topology, CSC over V_ij including one self-loop per destination
  // (added if the graph lacks it); duplicates kept. Edge k of destination
  // v = dst_begin + d is offsets[d] <= k < offsets[d+1].
  std::vector<int64_t> offsets;       // |V_ij| + 1
  std::vector<uint32_t> src_local;    // index into nbr
  std::vector<uint32_t> src_merged;   // index into the merged buffer of GPU i
  std::vector<vid_t> src_vid;         // the source's new id (for checks and weights)

  // Transition set 𝕅_ij: vertices owned by partition i that some GPU needs in
  // batch j; ascending ids; slot in GPU i's transition buffer; reused = 1 when
  // the vertex was in 𝕅_i,j-1 (same slot, 𝕅^gpu_ij), 0 when loaded from host.
  std::vector<vid_t> trans_vid;
  std::vector<uint32_t> trans_slot;
  std::vector<uint8_t> trans_reused;

  // Remote rows of N_ij (owned by other GPUs), in merged-buffer order: merged
  // index trans_capacity[i] + r reads GPU remote_gpu[r]'s slot remote_slot[r].
  std::vector<vid_t> remote_vid;
  std::vector<int32_t> remote_gpu;
  std::vector<uint32_t> remote_slot;

  // Backward, full mode: after batch j, gradients of these transition slots
  // leave GPU i (compacted, copied to host, added into ∇h); the others stay
  // for batch j+1. After the last batch every slot is flushed.
  std::vector<uint32_t> flush_slot;
  std::vector<vid_t> flush_vid;

  int64_t num_dst() const { return dst_end - dst_begin; }
  int64_t num_edges() const { return offsets.empty() ? 0 : offsets.back(); }
};

struct PlanVolumes {
  int64_t v_ori = 0;  // Σ_j Σ_i |N_ij|
  int64_t v_p2p = 0;  // Σ_j |𝕅∪_j|
  int64_t v_ru = 0;   // |𝕅∪_0| + Σ_j |𝕅∪_j \ 𝕅∪_j-1|
};

struct Plan {
  int m = 1, n = 1;
  int64_t num_vertices = 0;
  FileIdentity graph_identity;      // graph file it was made for
  FileIdentity partition_identity;  // partition file it was made from
  bool reorganized = true;
  std::vector<int64_t> part_offsets;  // m + 1 (new ids)
  std::vector<ChunkPlan> steps;       // index j * m + i

  // Capacities per GPU (rows), maxima over batches.
  std::vector<uint32_t> trans_capacity;   // transition buffer
  std::vector<uint32_t> remote_capacity;  // remote area of the merged buffer
  std::vector<uint32_t> nbr_capacity;     // baseline neighbor buffer (max |N_ij|)
  std::vector<int64_t> max_dst;           // max |V_ij|
  std::vector<int64_t> max_edges;         // max |E_ij| (with self-loops)
  PlanVolumes volumes;                    // of this (reorganized) order
  PlanVolumes volumes_before;             // of the partitioner's order
  double cost_before = 0, cost_after = 0; // Eq. 4, seconds per unit row width
  double seconds = 0;                     // preprocessing time

  const ChunkPlan& step(int batch, int gpu) const { return steps[static_cast<size_t>(batch) * m + gpu]; }
  ChunkPlan& step(int batch, int gpu) { return steps[static_cast<size_t>(batch) * m + gpu]; }
  uint32_t merged_capacity(int gpu) const { return trans_capacity[gpu] + remote_capacity[gpu]; }
};

}  // namespace ht
