#include "core/hash.hpp"

#include <cstring>

namespace ht {
namespace {
constexpr uint64_t P1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t P2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t P3 = 0x165667B19E3779F9ULL;
constexpr uint64_t P4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t P5 = 0x27D4EB2F165667C5ULL;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t read64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only (checked by the file formats' byte-order mark)
}
inline uint32_t read32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t round(uint64_t acc, uint64_t input) {
  acc += input * P2;
  acc = rotl(acc, 31);
  return acc * P1;
}
inline uint64_t merge_round(uint64_t acc, uint64_t val) {
  acc ^= round(0, val);
  return acc * P1 + P4;
}
inline uint64_t finish(uint64_t h, const unsigned char* p, size_t len) {
  while (len >= 8) {
    h ^= round(0, read64(p));
    h = rotl(h, 27) * P1 + P4;
    p += 8;
    len -= 8;
  }
  if (len >= 4) {
    h ^= static_cast<uint64_t>(read32(p)) * P1;
    h = rotl(h, 23) * P2 + P3;
    p += 4;
    len -= 4;
  }
  while (len > 0) {
    h ^= (*p) * P5;
    h = rotl(h, 11) * P1;
    ++p;
    --len;
  }
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}
inline uint64_t converge(const uint64_t v[4]) {
  uint64_t h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
  for (int i = 0; i < 4; ++i) h = merge_round(h, v[i]);
  return h;
}
}  // namespace

uint64_t xxh64(const void* data, size_t len, uint64_t seed) {
  Xxh64Stream s(seed);
  s.update(data, len);
  return s.digest();
}

Xxh64Stream::Xxh64Stream(uint64_t seed) : seed_(seed) {
  v_[0] = seed + P1 + P2;
  v_[1] = seed + P2;
  v_[2] = seed;
  v_[3] = seed - P1;
}

void Xxh64Stream::update(const void* data, size_t len) {
  auto p = static_cast<const unsigned char*>(data);
  total_ += len;
  if (buf_len_ + len < 32) {
    if (len) std::memcpy(buf_ + buf_len_, p, len);
    buf_len_ += len;
    return;
  }
  if (buf_len_ > 0) {
    const size_t fill = 32 - buf_len_;
    std::memcpy(buf_ + buf_len_, p, fill);
    for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], read64(buf_ + 8 * i));
    p += fill;
    len -= fill;
    buf_len_ = 0;
  }
  while (len >= 32) {
    v_[0] = round(v_[0], read64(p));
    v_[1] = round(v_[1], read64(p + 8));
    v_[2] = round(v_[2], read64(p + 16));
    v_[3] = round(v_[3], read64(p + 24));
    p += 32;
    len -= 32;
  }
  if (len) std::memcpy(buf_, p, len);
  buf_len_ = len;
}

uint64_t Xxh64Stream::digest() const {
  uint64_t h = total_ >= 32 ? converge(v_) : seed_ + P5;
  h += total_;
  return finish(h, buf_, buf_len_);
}

}  // namespace ht
