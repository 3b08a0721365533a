#pragma once
// What the kernel did for this process: its CPU seconds in the kernel and the
// machine's page-fault, huge-page and compaction counters. Setup of a large
// run faults in a hundred GiB of vertex store and step lists; where it is
// bound by the kernel (page faults, zeroing, compacting free memory into
// 2 MiB pages, with transparent huge pages' defrag set to madvise) its system
// CPU seconds and these counters say so (issue 33).
#include <cstdint>
#include <istream>
#include <string>
#include <utility>
#include <vector>

namespace ht {

// CPU seconds and page faults of the whole process (every thread) since it
// started (getrusage).
struct CpuSeconds {
  double user = 0, system = 0;
  int64_t minor_faults = 0, major_faults = 0;
};
CpuSeconds process_cpu_seconds();

// Counters of /proc/vmstat (machine-wide: another process's faults count
// too), those of kVmCounters that the kernel has, in that order.
using VmCounters = std::vector<std::pair<std::string, int64_t>>;
inline constexpr const char* kVmCounters[] = {
    "pgfault",        "pgmajfault",      "thp_fault_alloc", "thp_fault_fallback", "compact_stall",
    "compact_fail",   "compact_success", "allocstall_normal", "pgscan_direct",
};
VmCounters read_vm_counters(std::istream& vmstat);
VmCounters read_vm_counters();  // /proc/vmstat; empty where it cannot be read

// "name +delta, ..." for the counters in both (after's order); "" when none.
std::string vm_counter_deltas(const VmCounters& before, const VmCounters& after);

// The chosen value of a /sys/kernel/mm/transparent_hugepage setting's text
// ("always [madvise] never" -> "madvise"); "" when none is marked.
std::string chosen_setting(const std::string& text);
// "THP enabled madvise, defrag madvise" from /sys; parts that cannot be read left out.
std::string thp_settings();

}  // namespace ht
