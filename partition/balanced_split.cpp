#include "partition/balanced_split.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ht {

std::vector<int64_t> balanced_split(std::span<const double> weights, int pieces, int64_t min_size) {
  const int64_t k = static_cast<int64_t>(weights.size());
  HT_ASSERT(pieces >= 1 && min_size >= 0 && k >= static_cast<int64_t>(pieces) * min_size);
  std::vector<double> prefix(k + 1, 0.0);
  for (int64_t i = 0; i < k; ++i) prefix[i + 1] = prefix[i] + weights[i];
  const double total = prefix[k];
  std::vector<int64_t> cut(pieces + 1, 0);
  cut[pieces] = k;
  for (int j = 1; j < pieces; ++j) {
    const double target = total * j / pieces;
    int64_t b = std::lower_bound(prefix.begin(), prefix.end(), target) - prefix.begin();
    if (b > 0 && (b > k || target - prefix[b - 1] < prefix[b] - target)) --b;  // nearer of the two sides
    const int64_t lo = cut[j - 1] + min_size, hi = k - static_cast<int64_t>(pieces - j) * min_size;
    cut[j] = std::clamp(b, lo, hi);
  }
  return cut;
}

}  // namespace ht
