#pragma once
// From an assignment (old id -> partition) to the renumbering that makes each
// partition a contiguous range of new ids.
#include <cstdint>
#include <span>

#include "partition/partition.hpp"

namespace ht {

// Fills p.new_to_old, p.old_to_new and p.part_offsets (p.params.parts must be
// set). Partition 0 gets the first new ids, then partition 1, ...; inside a
// partition vertices keep their old relative order, which preserves the
// locality of the input order (neighbors with nearby ids stay nearby).
void layout_partitions(std::span<const int32_t> part_of, Partition& p);

}  // namespace ht
