#include "core/row_window.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"

namespace ht {

RowWindow::RowWindow(int64_t rows, int64_t row_bytes, int64_t begin, int64_t end) {
  HT_CHECK(rows >= 0 && row_bytes >= 0 && 0 <= begin && begin <= end && end <= rows,
           "row window [{}, {}) of {} rows", begin, end, rows);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  auto up = [&](size_t b) { return (b + page - 1) / page * page; };
  reserved_ = std::max(up(static_cast<size_t>(rows * row_bytes)), page);
  void* p = ::mmap(nullptr, reserved_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error(fmt::format("cannot reserve {} of address space: {}", format_bytes(static_cast<double>(reserved_)),
                            std::strerror(errno)));
  base_ = static_cast<std::byte*>(p);
  mapped_offset_ = static_cast<size_t>(begin * row_bytes) / page * page;
  if (begin == end || row_bytes == 0) return;  // nothing held: nothing mapped
  mapped_bytes_ = up(static_cast<size_t>(end * row_bytes)) - mapped_offset_;
  if (::mprotect(mapped(), mapped_bytes_, PROT_READ | PROT_WRITE) != 0) {
    const int err = errno;
    ::munmap(p, reserved_);
    throw Error(fmt::format("cannot map {} of host memory: {}", format_bytes(static_cast<double>(mapped_bytes_)),
                            std::strerror(err)));
  }
  advise_huge_pages(mapped(), mapped_bytes_);
  prefault_pages(mapped(), mapped_bytes_);  // anonymous pages are zero: faulted in by all cores
}

RowWindow::RowWindow(RowWindow&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      reserved_(std::exchange(o.reserved_, 0)),
      mapped_offset_(o.mapped_offset_),
      mapped_bytes_(std::exchange(o.mapped_bytes_, 0)) {}

RowWindow::~RowWindow() {
  if (base_) ::munmap(base_, reserved_);
}

}  // namespace ht
