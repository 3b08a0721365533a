// core/huge_pages: the share of ranges in transparent huge pages, from smaps.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "core/bulk_memory.hpp"
#include "core/huge_pages.hpp"
#include "core/kernel_counters.hpp"

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

// Pages of [p, p + bytes) the kernel has in memory (mincore), of all of them.
std::pair<int64_t, int64_t> resident_pages(const void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<uintptr_t>(p) / page * page;
  const size_t span = reinterpret_cast<uintptr_t>(p) + bytes - first;
  std::vector<unsigned char> in((span + page - 1) / page);
  if (::mincore(reinterpret_cast<void*>(first), span, in.data()) != 0) return {-1, 0};
  int64_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return {n, static_cast<int64_t>(in.size())};
}

// prefault_pages maps every page of the range it is given, and only those
// (the pages around it stay out), by either path: the kernel populating a
// thread's range at once (MADV_POPULATE_WRITE) or a byte per page touched
// (kernels before 5.14); with ranges that start and end inside pages and
// huge pages, split over threads, and the memory still zero.
TEST(PrefaultPages, MapsEveryPageOfTheRangeZeroed) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (bool populate : {true, false}) {
    BulkTuning t;
    t.populate = populate;
    ScopedBulkTuning tuning(t);
    for (size_t offset : {size_t{0}, size_t{100}, page + 5})
      for (size_t bytes : {size_t{1}, page, (size_t{5} << 20) + 333}) {
        const size_t whole = (size_t{16} << 20);
        void* m = ::mmap(nullptr, whole, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(m, MAP_FAILED);
        ::madvise(m, whole, MADV_NOHUGEPAGE);  // (pages counted one by one below)
        auto* p = static_cast<unsigned char*>(m) + (size_t{4} << 20) + offset;
        prefault_pages(p, bytes);
        const auto [in, of] = resident_pages(p, bytes);
        EXPECT_EQ(in, of) << "populate " << populate << ", offset " << offset << ", " << bytes << " bytes";
        EXPECT_EQ(resident_pages(m, size_t{4} << 20).first, 0) << "the pages before the range";
        EXPECT_EQ(resident_pages(p + bytes + 2 * page, (size_t{1} << 20)).first, 0) << "the pages after it";
        EXPECT_EQ(std::count(p, p + bytes, 0), static_cast<std::ptrdiff_t>(bytes));
        ::munmap(m, whole);
      }
  }
}

// The kernel's counters (issue 33's evidence): the /proc/vmstat counters
// asked for, in their order whatever the file's, the others left out; their
// deltas; the chosen value of a THP setting; this process's CPU seconds.
TEST(KernelCounters, ParsesCountersSettingsAndDeltas) {
  std::istringstream before("nr_free_pages 100\npgfault 10\nthp_fault_alloc 2\ncompact_stall 0\n");
  std::istringstream after("compact_stall 3\nnr_free_pages 50\npgfault 25\nthp_fault_alloc 2\n");
  const VmCounters b = read_vm_counters(before), a = read_vm_counters(after);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0], (std::pair<std::string, int64_t>{"pgfault", 25}));
  EXPECT_EQ(a[2], (std::pair<std::string, int64_t>{"compact_stall", 3}));
  EXPECT_EQ(vm_counter_deltas(b, a), "pgfault +15, thp_fault_alloc +0, compact_stall +3");
  EXPECT_EQ(vm_counter_deltas({}, a), "");
  EXPECT_EQ(chosen_setting("always [madvise] never"), "madvise");
  EXPECT_EQ(chosen_setting("always defer defer+madvise [madvise] never"), "madvise");
  EXPECT_EQ(chosen_setting("[always] madvise never\n"), "always");
  EXPECT_EQ(chosen_setting("nothing chosen"), "");
  const CpuSeconds c0 = process_cpu_seconds();
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + 1e-9 * i;
  const CpuSeconds c1 = process_cpu_seconds();
  EXPECT_GT(c1.user + c1.system, c0.user + c0.system);
  EXPECT_GE(c1.system, c0.system);
}

}  // namespace
}  // namespace ht
