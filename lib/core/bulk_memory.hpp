#pragma once
// Large arrays filled at memory speed. The readers of graph, partition and
// plan files move gigabytes into fresh std::vectors, and faulting fresh pages
// in one 4 KiB page at a time from one thread costs more than the copy itself
// (measured in a VM: 3 s per GiB, against 0.1 s with 2 MiB pages; issue 14).
// So large vectors get transparent huge pages where the kernel offers them
// on request and are first touched by all threads, and copies and checks run
// over blocks in parallel. Reporting stays deterministic: the "first bad
// element" searches below return what a sequential scan would.
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "core/scoped_override.hpp"

namespace ht {

// Sizes that switch the parallel paths on. Process-wide; tests shrink them
// (ScopedBulkTuning) so that tiny inputs take the same paths as large ones.
struct BulkTuning {
  size_t huge_bytes = size_t{4} << 20;  // vectors from this size: huge pages, parallel first touch
  size_t grain = size_t{1} << 16;       // elements per parallel task of copies and checks
  bool populate = true;                 // prefault_pages asks the kernel to populate (tests: the touching path)
};
BulkTuning& bulk_tuning();
using ScopedBulkTuning = ScopedOverride<BulkTuning, bulk_tuning>;

// Best effort (Linux): transparent huge pages for the 2 MiB-aligned interior
// of [p, p + bytes). A no-op where the kernel has them off.
void advise_huge_pages(void* p, size_t bytes) noexcept;

// Faults the pages of fresh memory in from all threads, so that the page
// faults (and the kernel's zeroing of the pages) run in parallel: each
// thread's range populated by the kernel in one call where it can
// (MADV_POPULATE_WRITE, Linux 5.14: nothing written), else one byte per page
// written with zero. For memory nothing has written yet.
void prefault_pages(void* p, size_t bytes);

// memcpy over blocks in parallel.
void parallel_copy(void* dst, const void* src, size_t bytes);

// Resizes `v` to n elements that the caller overwrites next. Large sizes get
// fresh storage with huge pages, faulted in by all threads; the serial
// zero-fill of resize() then runs over mapped pages at memory speed. The old
// contents are dropped; the new elements are zero (value-initialized).
template <typename T>
void resize_for_overwrite(std::vector<T>& v, size_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  const size_t bytes = n * sizeof(T);
  if (bytes < bulk_tuning().huge_bytes || n <= v.capacity()) {
    v.assign(n, T{});
    return;
  }
  std::vector<T> fresh;
  fresh.reserve(n);
  // Raw storage of trivially copyable elements, constructed by resize() below.
  advise_huge_pages(fresh.data(), bytes);
  prefault_pages(fresh.data(), bytes);
  fresh.resize(n);
  v.swap(fresh);
}

// resize_for_overwrite of several vectors: vs[k] to sizes[k] elements. The
// fresh storage of the large ones faulted in by all threads, one vector after
// another, then their zero-fills (resize(), serial within a vector) side by
// side. A plan's per-step lists sized one step after another were a serial
// memset over all of them; sized in a parallel loop over the steps, each
// step's pages were faulted by one thread (with one GPU: n of the cores).
template <typename T>
void resize_each_for_overwrite(std::span<std::vector<T>* const> vs, std::span<const size_t> sizes) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto count = static_cast<int64_t>(vs.size());
  std::vector<std::vector<T>> fresh(vs.size());
  for (size_t k = 0; k < vs.size(); ++k) {
    const size_t bytes = sizes[k] * sizeof(T);
    if (bytes < bulk_tuning().huge_bytes || sizes[k] <= vs[k]->capacity()) continue;
    fresh[k].reserve(sizes[k]);
    advise_huge_pages(fresh[k].data(), bytes);
    prefault_pages(fresh[k].data(), bytes);
  }
#pragma omp parallel for schedule(dynamic, 1) if (count > 1)
  for (int64_t k = 0; k < count; ++k) {
    if (fresh[k].capacity() == 0) {
      vs[k]->assign(sizes[k], T{});
      continue;
    }
    fresh[k].resize(sizes[k]);
    vs[k]->swap(fresh[k]);
  }
}

// A vector holding a copy of `src`, filled in parallel.
template <typename T>
std::vector<T> copy_to_vector(std::span<const T> src) {
  std::vector<T> v;
  resize_for_overwrite(v, src.size());
  if (!src.empty()) parallel_copy(v.data(), src.data(), src.size_bytes());
  return v;
}

// Index of the first k in [0, n) with bad(k), or -1: blocks are scanned in
// parallel, each up to its first hit, and the smallest hit wins.
template <typename Bad>
int64_t first_bad(int64_t n, Bad bad) {
  const int64_t grain = static_cast<int64_t>(std::max<size_t>(bulk_tuning().grain, 1));
  const int64_t blocks = (n + grain - 1) / grain;
  int64_t first = std::numeric_limits<int64_t>::max();
#pragma omp parallel for schedule(dynamic, 1) reduction(min : first) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(n, (b + 1) * grain);
    for (int64_t k = b * grain; k < end; ++k)
      if (bad(k)) {
        first = std::min(first, k);
        break;
      }
  }
  return first == std::numeric_limits<int64_t>::max() ? -1 : first;
}

// Runs body(begin, end) over blocks of [0, n) in parallel.
template <typename Body>
void parallel_blocks(int64_t n, Body body) {
  const int64_t grain = static_cast<int64_t>(std::max<size_t>(bulk_tuning().grain, 1));
  const int64_t blocks = (n + grain - 1) / grain;
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) body(b * grain, std::min(n, (b + 1) * grain));
}

// body(k) for every k in [0, n), one index per task, in parallel (when
// `parallel` and n > 1: steps or chunks of different sizes); the first
// exception a body throws is rethrown after the loop.
template <typename Body>
void parallel_tasks(int64_t n, Body body, bool parallel = true) {
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1) if (parallel && n > 1)
  for (int64_t k = 0; k < n; ++k) {
    try {
      body(k);
    } catch (...) {
#pragma omp critical(ht_parallel_tasks_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

// `bytes` bytes of zeroed host memory (anonymous pages, huge where the
// kernel offers them), faulted in by whoever writes them first (no serial
// first touch here): blocks that are filled once, in parallel, and read a
// few times. Unmapped on destruction.
class HostBlock {
 public:
  explicit HostBlock(size_t bytes);
  ~HostBlock();
  HostBlock(HostBlock&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;
  HostBlock& operator=(HostBlock&&) = delete;
  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  std::byte* data_ = nullptr;
  size_t bytes_ = 0;
};

// In-place inclusive prefix sum, in parallel (per-block sums, their prefix,
// then each block again with its start value).
void parallel_inclusive_scan(std::span<int64_t> a);

}  // namespace ht
