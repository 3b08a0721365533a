#pragma once
// XXH64 (the public xxHash 64-bit algorithm), one-shot and streaming.
// Used for section checksums and for the identity of inputs.
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
  uint64_t v_[4];
  uint64_t seed_;
  uint64_t total_ = 0;
  unsigned char buf_[32];
  size_t buf_len_ = 0;
};

}  // namespace ht
