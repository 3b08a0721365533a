// Row windows (core/row_window.hpp) and the vertex-store matrices built on
// them (Executor::alloc_host_rows): a process of a multi-process job holds
// only its own partitions' rows, at their places, and whole-matrix
// operations touch only those rows.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/row_window.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/host_rows.hpp"

namespace ht {
namespace {

TEST(RowWindow, HoldsItsRowsZeroedAtTheirPlaces) {
  const int64_t rows = 100000, row_bytes = 72, begin = 31234, end = 70001;
  RowWindow w(rows, row_bytes, begin, end);
  EXPECT_LE(w.mapped(), w.base() + begin * row_bytes);
  EXPECT_GE(w.mapped() + w.mapped_bytes(), w.base() + end * row_bytes);
  // The window is only what it needs, to the page.
  EXPECT_LT(w.mapped_bytes(), static_cast<size_t>((end - begin) * row_bytes) + 2 * 65536);
  for (int64_t r = begin; r < end; r += 997) {
    std::byte* row = w.base() + r * row_bytes;
    for (int64_t b = 0; b < row_bytes; ++b) ASSERT_EQ(row[b], std::byte{0});
    std::memset(row, 0x5a, static_cast<size_t>(row_bytes));
  }
  std::memset(w.base() + (end - 1) * row_bytes, 1, static_cast<size_t>(row_bytes));  // the last row is writable
  RowWindow moved(std::move(w));
  EXPECT_EQ(moved.base()[(end - 1) * row_bytes], std::byte{1});
}

TEST(RowWindow, EmptyAndWholeWindows) {
  RowWindow none(10, 8, 5, 5);
  EXPECT_EQ(none.mapped_bytes(), 0u);
  RowWindow all(10, 8, 0, 10);
  std::memset(all.base(), 3, 80);
  EXPECT_EQ(all.base()[79], std::byte{3});
  EXPECT_THROW(RowWindow(10, 8, 6, 5), Error);
  EXPECT_THROW(RowWindow(10, 8, 0, 11), Error);
}

TEST(RowWindow, StoreOperationsTouchOnlyTheHeldRows) {
  CpuExecutor exec(1);
  const int64_t n = 50, cols = 3, begin = 20, end = 35;
  for (StoreDtype t : {StoreDtype::f32, StoreDtype::bf16}) {
    const HostMat m = exec.alloc_host_rows(n, cols, t, begin, end);
    EXPECT_TRUE(m.holds(begin) && m.holds(end - 1) && !m.holds(begin - 1) && !m.holds(end));
    std::vector<float> src(static_cast<size_t>(n * cols));
    for (size_t k = 0; k < src.size(); ++k) src[k] = static_cast<float>(k);
    exec.store_fill(m, src);  // would fault outside the window
    std::vector<float> back(src.size(), -1.0f);
    exec.store_read(m, back);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float got = back[static_cast<size_t>(r * cols + c)];
        if (r >= begin && r < end)
          EXPECT_EQ(got, src[static_cast<size_t>(r * cols + c)]) << "row " << r;  // small integers: exact in bf16
        else
          EXPECT_EQ(got, -1.0f) << "row " << r << " is not held: left as it was";
      }
    exec.store_zero(m);
    exec.store_read(m, back);
    for (int64_t r = begin; r < end; ++r) EXPECT_EQ(back[static_cast<size_t>(r * cols)], 0.0f);
  }
}

}  // namespace
}  // namespace ht
