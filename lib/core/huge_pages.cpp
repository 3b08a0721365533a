#include "core/huge_pages.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace ht {
namespace {

// "start-end perms ..." (a mapping's first line): its address range.
bool mapping_header(const std::string& line, uintptr_t& begin, uintptr_t& end) {
  const size_t dash = line.find('-');
  const size_t space = line.find(' ');
  if (dash == std::string::npos || space == std::string::npos || dash > space || dash == 0) return false;
  try {
    size_t used = 0;
    begin = std::stoull(line.substr(0, dash), &used, 16);
    if (used != dash) return false;
    end = std::stoull(line.substr(dash + 1, space - dash - 1), &used, 16);
    return used == space - dash - 1 && end > begin;
  } catch (...) {  // a field line ("Size: ...") is not a header
    return false;
  }
}

}  // namespace

int64_t huge_page_bytes(std::istream& smaps, std::span<const MemoryRange> ranges) {
  double total = 0;
  uintptr_t begin = 0, end = 0;
  size_t overlap = 0;  // of the current mapping with the ranges
  std::string line;
  while (std::getline(smaps, line)) {
    uintptr_t b = 0, e = 0;
    if (mapping_header(line, b, e)) {
      begin = b;
      end = e;
      overlap = 0;
      for (const MemoryRange& r : ranges) {
        const auto rb = reinterpret_cast<uintptr_t>(r.p), re = rb + r.bytes;
        if (rb < end && re > begin) overlap += std::min(re, end) - std::max(rb, begin);
      }
      continue;
    }
    if (overlap == 0 || line.rfind("AnonHugePages:", 0) != 0) continue;
    const double kib = std::stod(line.substr(14));
    total += kib * 1024.0 * static_cast<double>(overlap) / static_cast<double>(end - begin);
  }
  return static_cast<int64_t>(total);
}

int64_t huge_page_bytes(std::span<const MemoryRange> ranges) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return -1;
  return huge_page_bytes(smaps, ranges);
}

}  // namespace ht
