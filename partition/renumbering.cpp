#include "partition/renumbering.hpp"

#include "core/error.hpp"

namespace ht {

void layout_partitions(std::span<const int32_t> part_of, Partition& p) {
  const int m = p.params.parts;
  const int64_t n = static_cast<int64_t>(part_of.size());
  p.num_vertices = n;
  p.part_offsets.assign(m + 1, 0);
  for (int32_t q : part_of) {
    HT_ASSERT(q >= 0 && q < m);
    ++p.part_offsets[q + 1];
  }
  for (int q = 0; q < m; ++q) p.part_offsets[q + 1] += p.part_offsets[q];
  // Counting sort by partition, stable in the old id: keeps relative order.
  std::vector<int64_t> next(p.part_offsets.begin(), p.part_offsets.end() - 1);
  p.new_to_old.resize(n);
  p.old_to_new.resize(n);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t id = next[part_of[v]]++;
    p.new_to_old[id] = static_cast<vid_t>(v);
    p.old_to_new[v] = static_cast<vid_t>(id);
  }
}

}  // namespace ht
