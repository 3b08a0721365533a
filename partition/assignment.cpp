#include "partition/assignment.hpp"

#include <numeric>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "partition/balanced_split.hpp"

namespace ht {
namespace {

// Assigns the items of `order` (old ids) to the pieces of a balanced split of
// their weights taken in that order.
std::vector<int32_t> assign_in_order(std::span<const int64_t> order, std::span<const double> weights, int parts,
                                     int64_t min_size) {
  std::vector<double> ordered(order.size());
  for (size_t i = 0; i < order.size(); ++i) ordered[i] = weights[order[i]];
  const std::vector<int64_t> cut = balanced_split(ordered, parts, min_size);
  std::vector<int32_t> part_of(order.size());
  for (int p = 0; p < parts; ++p)
    for (int64_t i = cut[p]; i < cut[p + 1]; ++i) part_of[order[i]] = p;
  return part_of;
}

}  // namespace

std::vector<int32_t> range_assignment(std::span<const double> weights, int parts, int64_t min_size) {
  const std::vector<int64_t> cut = balanced_split(weights, parts, min_size);
  std::vector<int32_t> part_of(weights.size());
  for (int p = 0; p < parts; ++p)
    for (int64_t i = cut[p]; i < cut[p + 1]; ++i) part_of[i] = p;
  return part_of;
}

std::vector<int32_t> random_assignment(std::span<const double> weights, int parts, int64_t min_size,
                                       uint64_t seed) {
  std::vector<int64_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  rng::Stream rs(seed, 0x72616E646F6DULL);  // stream "random"
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rs.below(i)]);  // Fisher-Yates
  return assign_in_order(order, weights, parts, min_size);
}

int64_t ensure_min_part_size(std::vector<int32_t>& part_of, int parts, int64_t min_size) {
  HT_ASSERT(static_cast<int64_t>(part_of.size()) >= static_cast<int64_t>(parts) * min_size);
  std::vector<int64_t> count(parts, 0);
  const int64_t n = static_cast<int64_t>(part_of.size());
#pragma omp parallel
  {
    std::vector<int64_t> local(parts, 0);
#pragma omp for schedule(static) nowait
    for (int64_t v = 0; v < n; ++v) ++local[part_of[v]];
#pragma omp critical
    for (int p = 0; p < parts; ++p) count[p] += local[p];  // integer sums: order-free
  }
  int64_t moved = 0;
  int needy = 0;  // partitions below min_size are filled in index order
  auto advance = [&] {
    while (needy < parts && count[needy] >= min_size) ++needy;
  };
  advance();
  for (int64_t v = static_cast<int64_t>(part_of.size()) - 1; v >= 0 && needy < parts; --v) {
    const int32_t from = part_of[v];
    if (count[from] <= min_size) continue;  // would become needy itself
    --count[from];
    part_of[v] = needy;
    ++count[needy];
    ++moved;
    advance();
  }
  HT_ASSERT(needy == parts);
  return moved;
}

}  // namespace ht
