#include "core/kernel_counters.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

namespace ht {

CpuSeconds process_cpu_seconds() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return {};
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return {sec(u.ru_utime), sec(u.ru_stime), u.ru_minflt, u.ru_majflt};
}

VmCounters read_vm_counters(std::istream& vmstat) {
  VmCounters found;
  std::string name;
  int64_t value = 0;
  while (vmstat >> name >> value) {
    const auto* known = std::find(std::begin(kVmCounters), std::end(kVmCounters), name);
    if (known != std::end(kVmCounters)) found.emplace_back(name, value);
  }
  VmCounters out;  // in kVmCounters' order, whatever the kernel's
  for (const char* k : kVmCounters)
    for (const auto& f : found)
      if (f.first == k) out.push_back(f);
  return out;
}

VmCounters read_vm_counters() {
  std::ifstream in("/proc/vmstat");
  if (!in) return {};
  return read_vm_counters(in);
}

std::string vm_counter_deltas(const VmCounters& before, const VmCounters& after) {
  std::string out;
  for (const auto& [name, value] : after)
    for (const auto& [b_name, b_value] : before)
      if (b_name == name) out += fmt::format("{}{} +{}", out.empty() ? "" : ", ", name, value - b_value);
  return out;
}

std::string chosen_setting(const std::string& text) {
  const size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return text.substr(open + 1, close - open - 1);
}

std::string thp_settings() {
  std::string out;
  for (const char* name : {"enabled", "defrag"}) {
    std::ifstream in(fmt::format("/sys/kernel/mm/transparent_hugepage/{}", name));
    std::string line;
    if (!in || !std::getline(in, line)) continue;
    const std::string chosen = chosen_setting(line);
    if (!chosen.empty()) out += fmt::format("{}{} {}", out.empty() ? "THP " : ", ", name, chosen);
  }
  return out;
}

}  // namespace ht
