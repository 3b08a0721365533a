#include "engine/cache_value.hpp"

#include <algorithm>
#include <numeric>

namespace ht {

std::vector<size_t> rank_by_value(std::span<const CacheCandidate> c) {
  std::vector<size_t> order(c.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c[a].value() > c[b].value(); });
  return order;
}

}  // namespace ht
