#pragma once
// How much of a set of memory ranges the kernel backs with transparent huge
// pages. Random row reads and adds into a store of tens of GiB take a TLB miss
// on nearly every row with 4 KiB pages; with 2 MiB pages they mostly do not
// (an it-2004-like epoch on one H100 ran 13.1 s in one call and 9.2 s in the
// next with the same bytes, its host adds 2.2x slower: bench/RESULTS.md,
// session 12). ht-train says what share it got, so that a slow run can tell.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <span>

namespace ht {

struct MemoryRange {
  const void* p = nullptr;
  size_t bytes = 0;
};

// Bytes of `ranges` in huge pages by a /proc/<pid>/smaps text: each mapping's
// AnonHugePages counted by the share of the mapping the ranges overlap.
int64_t huge_page_bytes(std::istream& smaps, std::span<const MemoryRange> ranges);

// The same for this process (/proc/self/smaps); -1 where it cannot be read.
int64_t huge_page_bytes(std::span<const MemoryRange> ranges);

}  // namespace ht
