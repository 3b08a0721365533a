// 16-bit floats of the vertex store (core/half.hpp): every bit pattern widens
// and narrows back to itself; narrowing rounds to the nearest representable
// value with ties to even (checked against exact arithmetic in double, and
// for fp16 against the compiler's _Float16); fp16 overflows to Inf exactly
// from 65520 up and underflows through its subnormals to ±0.
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "core/half.hpp"
#include "core/rng.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/host_rows.hpp"

namespace ht {
namespace {

bool is_nan16(uint16_t h, StoreDtype t) { return std::isnan(widen16(h, t)); }

// The nearest of the two 16-bit neighbours of `x` (ties to the even one),
// by exact comparison in double.
uint16_t nearest_by_search(float x, StoreDtype t) {
  uint16_t lo = narrow16(x, t);
  // Walk to the pattern just at or below |x| in magnitude, then compare with the next one up.
  const uint16_t sign = lo & 0x8000u;
  uint16_t mag = lo & 0x7fffu;
  const double ax = std::fabs(static_cast<double>(x));
  while (mag > 0 && static_cast<double>(widen16(mag, t)) > ax) --mag;
  while (static_cast<double>(widen16(static_cast<uint16_t>(mag + 1), t)) <= ax) ++mag;
  const double below = widen16(mag, t), above = widen16(static_cast<uint16_t>(mag + 1), t);
  const double dl = ax - below, du = above - ax;
  uint16_t pick = (dl < du || (dl == du && (mag & 1) == 0)) ? mag : static_cast<uint16_t>(mag + 1);
  return static_cast<uint16_t>(sign | pick);
}

TEST(Half, EveryPatternRoundTrips) {
  for (StoreDtype t : {StoreDtype::bf16, StoreDtype::f16}) {
    for (uint32_t h = 0; h < 65536; ++h) {
      const auto b = static_cast<uint16_t>(h);
      if (is_nan16(b, t)) {
        EXPECT_TRUE(is_nan16(narrow16(widen16(b, t), t), t));
        continue;
      }
      ASSERT_EQ(narrow16(widen16(b, t), t), b) << dtype_name(t) << " pattern " << h;
    }
  }
}

TEST(Half, NarrowingRoundsToNearestEven) {
  rng::Stream r(11, 1);
  for (StoreDtype t : {StoreDtype::bf16, StoreDtype::f16}) {
    const double range = t == StoreDtype::f16 ? 16.0 : 60.0;  // log2 magnitudes around 1, within each type's range
    for (int i = 0; i < 200000; ++i) {
      const float x = static_cast<float>((r.uniform() * 2 - 1) * std::exp2(r.uniform() * 2 * range - range - 8));
      ASSERT_EQ(narrow16(x, t), nearest_by_search(x, t)) << dtype_name(t) << " x = " << x;
    }
    // Exact ties between two neighbours go to the even one.
    for (uint16_t mag : {uint16_t{0x3c00}, uint16_t{0x3c01}, uint16_t{0x0001}, uint16_t{0x0400}}) {
      const double mid = (static_cast<double>(widen16(mag, t)) + widen16(static_cast<uint16_t>(mag + 1), t)) / 2;
      const uint16_t even = (mag & 1) ? static_cast<uint16_t>(mag + 1) : mag;
      EXPECT_EQ(narrow16(static_cast<float>(mid), t), even) << dtype_name(t) << " tie above " << mag;
    }
  }
}

TEST(Half, Fp16MatchesCompilerConversion) {
#if defined(__FLT16_MAX__)
  rng::Stream r(12, 1);
  for (int i = 0; i < 200000; ++i) {
    const float x = static_cast<float>((r.uniform() * 2 - 1) * std::exp2(r.uniform() * 50 - 30));
    const _Float16 ref = static_cast<_Float16>(x);
    uint16_t bits;
    std::memcpy(&bits, &ref, 2);
    ASSERT_EQ(float_to_f16(x), bits) << "x = " << x;
    ASSERT_EQ(f16_to_float(bits), static_cast<float>(ref));
  }
#else
  GTEST_SKIP() << "this compiler has no _Float16 to compare with";
#endif
}

TEST(Half, Fp16RangeEdges) {
  EXPECT_EQ(f16_to_float(float_to_f16(65504.f)), 65504.f);
  EXPECT_EQ(f16_to_float(float_to_f16(65519.f)), 65504.f);
  EXPECT_TRUE(std::isinf(f16_to_float(float_to_f16(65520.f))));
  EXPECT_TRUE(std::isinf(f16_to_float(float_to_f16(-1e30f))));
  EXPECT_EQ(f16_to_float(float_to_f16(0x1p-24f)), 0x1p-24f);  // smallest subnormal
  EXPECT_EQ(float_to_f16(0x1p-25f), 0);                         // tie with 0: even
  EXPECT_EQ(float_to_f16(0x1.8p-25f), 1);                       // above the tie
  EXPECT_EQ(float_to_f16(-0x1p-26f), 0x8000);                   // -0
  EXPECT_NEAR(bf16_to_float(float_to_bf16(3.0e38f)) / 3.0e38, 1.0, 0x1p-8);  // bf16 keeps fp32's range
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

// The host add of returned gradient rows: fp32 sum of the two widened rows,
// rounded once; an fp32 store adds exactly as before.
TEST(Half, HostAddRoundsOnce) {
  CpuExecutor exec(1);
  for (StoreDtype t : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16}) {
    HostMat a = exec.alloc_host(2, 5, t), b = exec.alloc_host(1, 5, t);
    const std::vector<float> av{1.f, 0.1f, -3.3f, 100.f, 1e-3f}, bv{1.f / 3, 0.2f, 3.3f, 0.07f, -1e-3f};
    store_row(a, 1, av.data(), 5);
    store_row(b, 0, bv.data(), 5);
    add_row(a, 1, b, 0);
    std::vector<float> got(5);
    load_row(a, 1, got.data(), 5);
    for (int64_t c = 0; c < 5; ++c)
      EXPECT_EQ(got[c], round_to(round_to(av[c], t) + round_to(bv[c], t), t)) << dtype_name(t) << " col " << c;
    EXPECT_EQ(a.bytes(), 10 * dtype_bytes(t));
  }
}

}  // namespace
}  // namespace ht
