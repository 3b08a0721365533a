#pragma once
// XXH64 (the public xxHash 64-bit algorithm), one-shot and streaming, from
// libxxhash (Debian libxxhash-dev). Used for section checksums and for the
// identity of inputs.
#include <cstddef>
#include <cstdint>
#include <span>

namespace ht {

uint64_t xxh64(const void* data, size_t len, uint64_t seed = 0);

class Xxh64Stream {
 public:
  explicit Xxh64Stream(uint64_t seed = 0);
  void update(const void* data, size_t len);
  uint64_t digest() const;

 private:
  // libxxhash's XXH64_state_t, held here so that a stream allocates nothing
  // (hash.cpp checks that it fits).
  static constexpr size_t kStateBytes = 96;
  alignas(8) unsigned char state_[kStateBytes];
};

}  // namespace ht
