#include "core/bulk_memory.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory.hpp"

namespace ht {
namespace {
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
constexpr size_t kPage = 4096;  // the smallest page: touching each one is enough for any page size

// Bytes per block of a parallel copy: large enough that a block costs far
// more than scheduling it, and scaled with the grain so that tests can shrink it.
size_t copy_block_bytes() { return std::max<size_t>(bulk_tuning().grain, 1) * 64; }

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 (older headers lack the name; an older kernel refuses it)
#endif

// [p, p + bytes) mapped writable: populated by the kernel in one call (from
// the page that holds p), else a byte per page written (zero: fresh memory).
void populate_or_touch(unsigned char* p, size_t bytes) {
  const auto page = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{kPage} - 1);
  const size_t span = reinterpret_cast<uintptr_t>(p) + bytes - page;
  if (bulk_tuning().populate && ::madvise(reinterpret_cast<void*>(page), span, MADV_POPULATE_WRITE) == 0) return;
  volatile unsigned char* c = p;
  for (size_t off = 0; off < bytes; off += kPage) c[off] = 0;
  c[bytes - 1] = 0;  // (the last page, where bytes is not a multiple of kPage)
}
}  // namespace

BulkTuning& bulk_tuning() {
  static BulkTuning tuning;
  return tuning;
}

void advise_huge_pages(void* p, size_t bytes) noexcept {
  const auto begin = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHugePage - 1);
  // Failure (no THP support, or a kernel that refuses) only costs speed.
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// Each thread one contiguous range, its ends on 2 MiB boundaries (no huge
// page faulted by two threads at once: each would allocate and zero a whole
// 2 MiB page before all but one gave theirs back). The range is populated
// by one madvise(MADV_POPULATE_WRITE) call (Linux 5.14): the kernel maps
// every page writable as a write would, in one system call instead of a
// trap per page (per 4 KiB page where huge pages are refused), and writes
// nothing; elsewhere (an older kernel: EINVAL) by touching a byte per page.
void prefault_pages(void* p, size_t bytes) {
  if (bytes == 0) return;
  auto* c = static_cast<unsigned char*>(p);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(c), end = begin + bytes;
  const int64_t huge = static_cast<int64_t>(((end + kHugePage - 1) & ~(kHugePage - 1)) / kHugePage -
                                            (begin & ~(kHugePage - 1)) / kHugePage);
  const int threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), huge));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const uintptr_t first = begin & ~(kHugePage - 1);
    const uintptr_t b = std::max(begin, first + static_cast<uintptr_t>(huge * t / nt) * kHugePage);
    const uintptr_t e = std::min(end, first + static_cast<uintptr_t>(huge * (t + 1) / nt) * kHugePage);
    if (e > b) populate_or_touch(reinterpret_cast<unsigned char*>(b), e - b);
  }
}

void parallel_copy(void* dst, const void* src, size_t bytes) {
  // A copy of fewer blocks than threads in smaller ones, so that every
  // thread takes a share (down to 256 KiB): a GPU upload's 16 MiB pinned
  // pieces were four 4 MiB blocks, four threads copying while the rest
  // waited, and the copy engine waited for them (h^0 of a 2.45 M x 100
  // graph: 0.07 s for 0.93 GB, issue 33).
  constexpr size_t kMinShare = size_t{256} << 10;
  const auto threads = static_cast<size_t>(std::max(omp_get_max_threads(), 1));
  const size_t block = std::min(copy_block_bytes(), std::max(kMinShare, (bytes + threads - 1) / threads));
  const int64_t blocks = static_cast<int64_t>((bytes + block - 1) / block);
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t off = static_cast<size_t>(b) * block;
    std::memcpy(d + off, s + off, std::min(block, bytes - off));
  }
}

HostBlock::HostBlock(size_t bytes) : bytes_(bytes) {
  if (bytes_ == 0) return;
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error(fmt::format("cannot map {} of host memory: {}", format_bytes(static_cast<double>(bytes_)),
                            std::strerror(errno)));
  data_ = static_cast<std::byte*>(p);
  advise_huge_pages(data_, bytes_);
}

HostBlock::~HostBlock() {
  if (data_) ::munmap(data_, bytes_);
}

void parallel_inclusive_scan(std::span<int64_t> a) {
  const int64_t n = static_cast<int64_t>(a.size());
  const int64_t grain = static_cast<int64_t>(std::max<size_t>(bulk_tuning().grain, 1));
  const int64_t blocks = (n + grain - 1) / grain;
  std::vector<int64_t> start(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t sum = 0;
    for (int64_t k = b * grain; k < std::min(n, (b + 1) * grain); ++k) sum += a[k];
    start[b + 1] = sum;
  }
  for (int64_t b = 0; b < blocks; ++b) start[b + 1] += start[b];
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t sum = start[b];
    for (int64_t k = b * grain; k < std::min(n, (b + 1) * grain); ++k) a[k] = sum += a[k];
  }
}

}  // namespace ht
