// core/huge_pages: the share of ranges in transparent huge pages, from smaps.
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "core/bulk_memory.hpp"
#include "core/huge_pages.hpp"

namespace ht {
namespace {

const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

// Two mappings of 8 MiB and 4 MiB; the first has 6 MiB in huge pages.
const char* kSmaps =
    "7f0000000000-7f0000800000 rw-p 00000000 00:00 0 \n"
    "Size:               8192 kB\n"
    "AnonHugePages:      6144 kB\n"
    "7f0000800000-7f0000c00000 rw-p 00000000 00:00 0                          [heap]\n"
    "Size:               4096 kB\n"
    "AnonHugePages:         0 kB\n";

TEST(HugePages, CountsTheOverlapShareOfEachMapping) {
  auto bytes = [](std::vector<MemoryRange> r) {
    std::istringstream in(kSmaps);
    return huge_page_bytes(in, r);
  };
  EXPECT_EQ(bytes({{at(0x7f0000000000), 8 << 20}}), 6 << 20);          // the whole first mapping
  EXPECT_EQ(bytes({{at(0x7f0000000000), 4 << 20}}), 3 << 20);          // half of it: half its share
  EXPECT_EQ(bytes({{at(0x7f0000400000), 8 << 20}}), 3 << 20);          // half of it and the second
  EXPECT_EQ(bytes({{at(0x7f0000800000), 4 << 20}}), 0);                // the second: none
  EXPECT_EQ(bytes({{at(0x100000), 4 << 20}}), 0);                      // not mapped
  EXPECT_EQ(bytes({{at(0x7f0000000000), 2 << 20}, {at(0x7f0000600000), 2 << 20}}), 3 << 20);  // two ranges
  EXPECT_EQ(bytes({}), 0);
}

TEST(HugePages, ThisProcessAtMostTheRange) {
  HostBlock block(size_t{16} << 20);  // advised huge pages
  prefault_pages(block.data(), block.size());
  const MemoryRange r{block.data(), block.size()};
  const int64_t got = huge_page_bytes(std::span<const MemoryRange>(&r, 1));
  ASSERT_GE(got, 0) << "/proc/self/smaps unreadable";
  EXPECT_LE(got, static_cast<int64_t>(block.size()));
}

}  // namespace
}  // namespace ht
