#pragma once
// Host memory for rows [begin, end) of a matrix of `rows` rows: the address
// range of the whole matrix is reserved (no memory behind it, no access) and
// only the window's pages are mapped, zeroed. Row r of the window lies at
// base() + r * row_bytes, where it would lie in the whole matrix, so code that
// addresses rows by vertex id needs no offsets. A process of a multi-process
// job holds its own partitions' rows this way; touching another process's
// rows faults at once instead of silently reading zeros.
#include <cstddef>
#include <cstdint>

namespace ht {

class RowWindow {
 public:
  RowWindow(int64_t rows, int64_t row_bytes, int64_t begin, int64_t end);
  ~RowWindow();
  RowWindow(RowWindow&& o) noexcept;
  RowWindow& operator=(RowWindow&&) = delete;
  RowWindow(const RowWindow&) = delete;
  RowWindow& operator=(const RowWindow&) = delete;

  std::byte* base() const { return base_; }  // row 0 of the whole matrix (not accessible unless held)
  // The mapped pages: every held row, page-aligned.
  std::byte* mapped() const { return base_ + mapped_offset_; }
  size_t mapped_bytes() const { return mapped_bytes_; }

 private:
  std::byte* base_ = nullptr;
  size_t reserved_ = 0, mapped_offset_ = 0, mapped_bytes_ = 0;
};

}  // namespace ht
