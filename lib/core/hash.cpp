#include "core/hash.hpp"

#include <new>

#define XXH_STATIC_LINKING_ONLY  // XXH64_state_t's definition, to hold it in Xxh64Stream
#include <xxhash.h>

namespace ht {
namespace {

XXH64_state_t* state_of(unsigned char* p) { return std::launder(reinterpret_cast<XXH64_state_t*>(p)); }
const XXH64_state_t* state_of(const unsigned char* p) {
  return std::launder(reinterpret_cast<const XXH64_state_t*>(p));
}

}  // namespace

uint64_t xxh64(const void* data, size_t len, uint64_t seed) { return XXH64(len ? data : "", len, seed); }

Xxh64Stream::Xxh64Stream(uint64_t seed) {
  static_assert(sizeof(XXH64_state_t) <= kStateBytes && alignof(XXH64_state_t) <= 8);
  XXH64_reset(new (state_) XXH64_state_t, seed);
}

void Xxh64Stream::update(const void* data, size_t len) {
  if (len > 0) XXH64_update(state_of(state_), data, len);
}

uint64_t Xxh64Stream::digest() const { return XXH64_digest(state_of(state_)); }

}  // namespace ht
