#pragma once
// 16-bit floats on the host: bfloat16 and IEEE binary16 (fp16), stored as
// uint16_t bit patterns. Narrowing rounds to nearest, ties to even, exactly
// as CUDA's __float2bfloat16_rn / __float2half_rn do, so that the CPU
// executor and the GPU kernels store the same bits; widening is exact.
// fp16: magnitudes from 65520 up become ±Inf, below 2^-25 ±0, and the
// range between 2^-24 and 2^-14 is subnormal (fewer significant bits).
#include <bit>
#include <cstdint>
#include <string_view>

#include "core/names.hpp"

namespace ht {

// Element type of the vertex store's host matrices (--host-dtype).
enum class StoreDtype : uint8_t { f32 = 0, bf16 = 1, f16 = 2 };

inline constexpr int64_t dtype_bytes(StoreDtype t) { return t == StoreDtype::f32 ? 4 : 2; }
inline constexpr std::string_view dtype_name(StoreDtype t) {
  return t == StoreDtype::f32 ? "fp32" : (t == StoreDtype::bf16 ? "bf16" : "fp16");
}
// dtype_name's names as a table (ht-train --host-dtype, ht-convert --feature-dtype).
const NameTable<StoreDtype>& store_dtype_names();

inline constexpr float kF16Max = 65504.0f;

inline uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN stays NaN (quiet)
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return static_cast<uint16_t>(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to 65520 or more: Inf
  uint32_t h, rem, half;
  if (a >= 0x38800000u) {  // normal in fp16
    h = ((((a >> 23) - 112u) << 10) | ((a & 0x7fffffu) >> 13));
    rem = a & 0x1fffu;
    half = 0x1000u;
  } else {
    if (a <= 0x33000000u) return static_cast<uint16_t>(sign);  // at most 2^-25: rounds to ±0
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - (a >> 23);  // 14 .. 24
    h = mant >> shift;
    rem = mant & ((1u << shift) - 1u);
    half = 1u << (shift - 1u);
  }
  if (rem > half || (rem == half && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
  return static_cast<uint16_t>(sign | h);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 0x1p-24f;  // exact: subnormal or zero
    return std::bit_cast<float>(std::bit_cast<uint32_t>(v) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t narrow16(float f, StoreDtype t) { return t == StoreDtype::bf16 ? float_to_bf16(f) : float_to_f16(f); }
inline float widen16(uint16_t h, StoreDtype t) { return t == StoreDtype::bf16 ? bf16_to_float(h) : f16_to_float(h); }

// Value `f` as the store keeps it (rounded to the dtype, widened back).
inline float round_to(float f, StoreDtype t) { return t == StoreDtype::f32 ? f : widen16(narrow16(f, t), t); }

}  // namespace ht
