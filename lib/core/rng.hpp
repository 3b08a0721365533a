#pragma once
// Counter-based random numbers: a pure function of (seed, counters), so the
// same value is produced whatever the thread count, partitioning, batch order
// or backend (the CUDA executor includes this header in device code).
// Dropout masks are keyed by (seed, epoch, layer, ORIGINAL vertex id, column)
// so that they do not depend on the partition's renumbering.
#include <cstdint>

#if defined(__CUDACC__)
#define HT_HD __host__ __device__ __forceinline__
#else
#define HT_HD inline
#endif

namespace ht::rng {

// SplitMix64 finalizer: a bijective 64-bit mixer with good avalanche.
HT_HD uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Hash of a key tuple; each component is absorbed through the mixer.
HT_HD uint64_t hash(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
  uint64_t h = mix64(seed ^ 0x6A09E667F3BCC909ULL);
  h = mix64(h ^ a);
  h = mix64(h ^ b);
  h = mix64(h ^ c);
  h = mix64(h ^ d);
  return h;
}

// Uniform float in [0, 1) from the top 24 bits.
HT_HD float to_unit_float(uint64_t h) { return static_cast<float>(h >> 40) * (1.0f / 16777216.0f); }
// Uniform double in [0, 1) from the top 53 bits.
HT_HD double to_unit_double(uint64_t h) {
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

// Sequential generator for host-side loops (generators, shuffles):
// deterministic per (seed, stream).
class Stream {
 public:
  HT_HD Stream(uint64_t seed, uint64_t stream) : state_(hash(seed, stream)), counter_(0) {}
  HT_HD uint64_t next() { return mix64(state_ + 0x9E3779B97F4A7C15ULL * (++counter_)); }
  HT_HD double uniform() { return to_unit_double(next()); }
  // Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^64).
  HT_HD uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  uint64_t state_;
  uint64_t counter_;
};

}  // namespace ht::rng
