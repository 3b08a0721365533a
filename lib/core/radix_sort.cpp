#include "core/radix_sort.hpp"

#include <algorithm>
#include <utility>

namespace ht {

void radix_sort(std::vector<uint64_t>& keys, size_t comparison_below) {
  const size_t n = keys.size();
  if (n < std::max<size_t>(comparison_below, 1)) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  constexpr int kDigits = 4;
  constexpr size_t kBuckets = size_t{1} << 16;
  std::vector<size_t> count(kDigits * kBuckets, 0);
  for (const uint64_t k : keys)
    for (int d = 0; d < kDigits; ++d) ++count[d * kBuckets + ((k >> (16 * d)) & 0xffff)];
  std::vector<uint64_t> other(n);
  for (int d = 0; d < kDigits; ++d) {
    size_t* c = count.data() + d * kBuckets;
    if (c[(keys[0] >> (16 * d)) & 0xffff] == n) continue;  // one digit value: the order stays
    size_t at = 0;
    for (size_t b = 0; b < kBuckets; ++b) at += std::exchange(c[b], at);
    for (const uint64_t k : keys) other[c[(k >> (16 * d)) & 0xffff]++] = k;
    keys.swap(other);
  }
}

}  // namespace ht
