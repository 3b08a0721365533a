#include "partition/vertex_bits.hpp"

#include <algorithm>

namespace ht {

// Blocks of words counted, then filled, in parallel: the members in ascending
// order whatever the thread count.
std::vector<vid_t> VertexBits::members_and_rank() {
  constexpr int64_t kBlock = 4096;  // words
  const int64_t words = static_cast<int64_t>(words_.size()), blocks = (words + kBlock - 1) / kBlock;
  std::vector<int64_t> start(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t c = 0;
    for (int64_t w = b * kBlock; w < std::min(words, (b + 1) * kBlock); ++w) c += std::popcount(words_[w]);
    start[b + 1] = c;
  }
  for (int64_t b = 0; b < blocks; ++b) start[b + 1] += start[b];
  std::vector<vid_t> out(static_cast<size_t>(start[blocks]));
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t k = start[b];
    for (int64_t w = b * kBlock; w < std::min(words, (b + 1) * kBlock); ++w) {
      first_[w] = static_cast<uint32_t>(k);
      for (uint64_t bits = words_[w]; bits != 0; bits &= bits - 1)
        out[k++] = static_cast<vid_t>(w * 64 + std::countr_zero(bits));
    }
  }
  return out;
}

void VertexBits::clear_all() {
  const int64_t words = static_cast<int64_t>(words_.size());
#pragma omp parallel for schedule(static)
  for (int64_t w = 0; w < words; ++w) words_[w] = 0;
}

}  // namespace ht
