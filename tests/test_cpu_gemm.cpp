// The CPU executor's GEMM (OpenBLAS, fixed row blocks): every transpose
// combination against a double-precision loop, leading dimensions wider than
// the matrices, beta 0 over garbage / beta 1 accumulating, k = 0, shapes
// around the row block; and the same bits for the same shape whatever the
// OpenMP thread count and however often it runs.
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "engine/cpu_executor.hpp"

namespace ht {
namespace {

std::vector<float> random_floats(size_t n, uint64_t seed) {
  rng::Stream r(seed, 3);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(r.uniform() * 2 - 1);
  return v;
}

struct Shape {
  bool ta, tb;
  int64_t m, n, k;
};

// C = alpha op(A) op(B) + beta C on the CPU device; leading dimensions pad
// every matrix by 3 columns.
std::vector<float> run_gemm(const Shape& s, float alpha, float beta, const std::vector<float>& a,
                            const std::vector<float>& b, std::vector<float> c) {
  const int64_t lda = (s.ta ? s.m : s.k) + 3, ldb = (s.tb ? s.k : s.n) + 3, ldc = s.n + 3;
  CpuDevice d(0);
  d.gemm(s.ta, s.tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  d.synchronize();
  return c;
}

}  // namespace

TEST(CpuGemm, MatchesDoublePrecisionLoop) {
  const Shape shapes[] = {{false, false, 37, 5, 11},  {true, false, 19, 16, 300},   {false, true, 300, 33, 7},
                          {true, true, 5, 9, 13},     {false, false, 513, 16, 700}, {true, false, 700, 7, 513},
                          {false, true, 257, 70, 16}, {false, false, 256, 1, 1},    {false, false, 1, 300, 2}};
  for (const Shape& s : shapes)
    for (float beta : {0.0f, 1.0f, 0.5f}) {
      SCOPED_TRACE(::testing::Message() << "ta " << s.ta << " tb " << s.tb << " m " << s.m << " n " << s.n << " k "
                                        << s.k << " beta " << beta);
      const int64_t lda = (s.ta ? s.m : s.k) + 3, ldb = (s.tb ? s.k : s.n) + 3, ldc = s.n + 3;
      const std::vector<float> a = random_floats((s.ta ? s.k : s.m) * lda, 1);
      const std::vector<float> b = random_floats((s.tb ? s.n : s.k) * ldb, 2);
      std::vector<float> c0 = random_floats(s.m * ldc, 3);
      // beta = 0 ignores what C held, NaN included.
      if (beta == 0.0f) c0[0] = std::numeric_limits<float>::quiet_NaN();
      const float alpha = 0.75f;
      const std::vector<float> c = run_gemm(s, alpha, beta, a, b, c0);
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double want = beta == 0.0f ? 0.0 : beta * static_cast<double>(c0[i * ldc + j]);
          for (int64_t p = 0; p < s.k; ++p)
            want += alpha * static_cast<double>(s.ta ? a[p * lda + i] : a[i * lda + p]) *
                    (s.tb ? b[j * ldb + p] : b[p * ldb + j]);
          ASSERT_NEAR(c[i * ldc + j], want, 1e-5 * (1 + std::sqrt(static_cast<double>(s.k)))) << i << "," << j;
        }
      // Padding columns of C untouched.
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = s.n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]);
    }
}

TEST(CpuGemm, EmptyInnerDimensionScalesC) {
  const Shape s{false, false, 300, 4, 0};
  const std::vector<float> a(1), b(8), c0 = random_floats(300 * 7, 4);
  for (float beta : {0.0f, 2.0f}) {
    const std::vector<float> c = run_gemm(s, 1.0f, beta, a, b, c0);
    for (int64_t i = 0; i < 300; ++i)
      for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(c[i * 7 + j], j < 4 ? beta * c0[i * 7 + j] : c0[i * 7 + j]);
  }
}

// The result is a function of the shape: repeated calls and 1, 2 or 3 OpenMP
// threads give the same bits (the copy timings and the bit-exact engine tests
// rely on it).
TEST(CpuGemm, SameBitsWhateverTheThreadCount) {
  for (const Shape& s : {Shape{false, false, 2708, 16, 1433}, Shape{true, false, 1433, 16, 2708},
                         Shape{false, true, 1000, 300, 16}}) {
    const int64_t lda = (s.ta ? s.m : s.k) + 3, ldb = (s.tb ? s.k : s.n) + 3, ldc = s.n + 3;
    const std::vector<float> a = random_floats((s.ta ? s.k : s.m) * lda, 5);
    const std::vector<float> b = random_floats((s.tb ? s.n : s.k) * ldb, 6);
    const std::vector<float> c0 = random_floats(s.m * ldc, 7);
    const int threads = omp_get_max_threads();
    std::vector<float> first;
    for (int t : {1, 2, 3, 2}) {
      omp_set_num_threads(t);
      const std::vector<float> c = run_gemm(s, 1.0f, 1.0f, a, b, c0);
      if (first.empty()) first = c;
      EXPECT_TRUE(c == first) << "threads " << t << " m " << s.m;
    }
    omp_set_num_threads(threads);
  }
}

}  // namespace ht
