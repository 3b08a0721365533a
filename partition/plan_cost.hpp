#pragma once
// Volumes of Eq. 4 for a batch order (paper §5.3) and the machine profile
// (the throughputs T_hd, T_dd, T_ru) read from a `key = value` file. Eq. 4
// itself is ht::comm_cost (plan/plan_stats.hpp).
#include <string>
#include <vector>

#include "partition/reorganize.hpp"
#include "plan/plan.hpp"
#include "plan/plan_stats.hpp"

namespace ht {

// 𝕅∪_j = ∪_i N_ij of every batch j under `order`, ascending.
std::vector<std::vector<vid_t>> batch_unions(const ChunkNeighbors& chunk_nbr, const BatchOrder& order);

// V_ori, V_p2p, V_ru (rows) of `order`, given its batch unions.
PlanVolumes volumes_of(const ChunkNeighbors& chunk_nbr, const std::vector<std::vector<vid_t>>& unions);
PlanVolumes order_volumes(const ChunkNeighbors& chunk_nbr, const BatchOrder& order);

// Reads a profile file over `base`: lines `t_hd = 55.6e9` (keys t_hd, t_dd,
// t_ru; bytes/s, > 0), blank lines and `#` comments allowed; keys not given
// keep `base`'s value. Unknown keys and bad numbers are errors with the line.
CostProfile read_cost_profile(const std::string& path, CostProfile base = {});

}  // namespace ht
