#pragma once
// --chunks auto (ht-train when it partitions in memory, and ht-partition):
// the smallest chunk count per GPU whose GPU working set, plus a tier kept
// for the GPU cache, fits a memory budget per GPU.
//
// The working set of a count is what the Trainer checks before it allocates
// (engine/memory_plan.hpp's device_memory_need), on the largest device. It is
// computed from the shape of the plan that count would get
// (partition/chunk_shape.hpp: neighbor sets, batch order and unions, no chunk
// topologies), so no plan is built for a candidate. The partition's
// assignment to GPUs is made once; only the chunking is redone per count.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/trainer_options.hpp"
#include "graph/graph.hpp"
#include "partition/chunking.hpp"
#include "partition/partition.hpp"

namespace ht {

struct TrainJob;

// TrainJob::chunks (and ht-partition's --chunks) value that asks for the choice.
inline constexpr int kChunksAuto = 0;
// The largest count tried. Past a few hundred chunks the per-chunk terms are
// small beside the per-vertex arrays and the merged buffer (on graphs without
// locality nearly every vertex is in every batch's transition set), while
// each batch's fixed costs (kernel launches, events, a step's lists) grow.
inline constexpr int kMaxAutoChunks = 128;

// The counts tried, ascending: 1, then the powers of two and their halfway
// points 3 * 2^k (2, 3, 4, 6, 8, 12, 16, 24, ...), at most `cap`.
std::vector<int> chunk_candidates(int cap);

struct ChunkBudget {
  int64_t bytes = 0;   // per GPU; 0: none
  std::string source;  // for messages: "--gpu-mem", "free memory of the GPUs"
};

// GPU memory kept free for the GPU cache next to the working set. With
// --gpu-cache auto: the input features' rows on the fullest GPU plus the
// margin the automatic cache leaves for the libraries, when that is at most
// 1/8 of the budget (the cache takes h^0 whole or not at all, so a smaller
// tier would be wasted; a larger one would buy cache with many more chunks),
// else nothing. With an explicit --gpu-cache size: that size. Off: nothing.
int64_t gpu_cache_tier(const TrainerOptions& opt, const Partition& p, int64_t feature_dim, int64_t budget);

struct ChunkNeed {
  int chunks = 0;
  int64_t working_set = 0;  // device_memory_need(...).total() of the largest device
  int gpu = 0;              // that device
};

// The working set of `p` as chunked, with the step placement resolved
// against `limit` as the Trainer does (0: no limit).
ChunkNeed chunk_working_set(const GraphView& g, const Partition& p, const TrainerOptions& opt, int64_t limit);
// At most that, whatever the batch order (partition_plan_shape_bound): one
// pass over the edges.
ChunkNeed chunk_working_set_bound(const GraphView& g, const Partition& p, const TrainerOptions& opt, int64_t limit);

// `base` (made with one chunk per partition) with each partition cut into
// `n` chunks as `requested` asks (its chunking, and its method as given:
// partition/chunking.hpp's make_chunks); the GPUs' vertex sets stay, so the
// result is the partition make_partition makes for `requested` with n chunks.
// `chunking`, when given, receives how the partitions were cut.
Partition rechunk(const GraphView& g, const Partition& base, const PartitionParams& requested, int n,
                  ChunkingInfo* chunking = nullptr);

struct ChunkChoice {
  int chunks = 1;
  int64_t budget = 0, tier = 0;
  ChunkNeed chosen;              // at `chunks` (working_set 0 when there was no budget)
  std::vector<ChunkNeed> tried;  // every count evaluated, in the order evaluated
  std::string summary;           // one line: what was chosen and why
  Partition partition;           // base cut into `chunks`
  ChunkingInfo chunking;         // how (partition/chunking.hpp; empty for n = 1)
};

// The choice for `base`, a partition made with one chunk per partition
// (its GPU assignment is kept; `requested`: see rechunk). Without a budget:
// n = 1, with a note. Throws an option error naming the smallest working set,
// that of the largest candidate, when it does not fit. A budget below even
// the bound of that working set fails before any other count is tried.
ChunkChoice choose_chunks(const GraphView& g, Partition base, const PartitionParams& requested,
                          const TrainerOptions& opt, const ChunkBudget& budget);

// The model a run trains: `m` with empty dims resolved as F-hidden-C from
// the graph (hidden: `hidden` when > 0, else 16 for GCN, 8 for GAT), as
// ht-train resolves --layers auto.
ModelConfig resolved_model(ModelConfig m, int hidden, int64_t feature_dim, int64_t num_classes);

// choose_chunks for a run's options (opt.model resolved by resolved_model
// and validated), with the summary logged.
ChunkChoice choose_model_chunks(const GraphView& g, Partition base, const PartitionParams& requested,
                                TrainerOptions opt, int hidden, const ChunkBudget& budget);

// ht-train's in-memory pipeline with --chunks auto: the budget from the job
// (--gpu-mem, the GPUs' free memory on cuda; none on the CPU backend), the
// choice logged; returns base (one chunk per partition, made with
// `requested`) cut into the chosen count.
Partition choose_job_chunks(const TrainJob& job, const GraphView& g, Partition base, const PartitionParams& requested);

}  // namespace ht
