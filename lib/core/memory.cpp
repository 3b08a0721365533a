#include "core/memory.hpp"

#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace ht {
namespace {
int64_t read_status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, len, key) == 0) return std::stoll(line.substr(len + 1)) * 1024;
  }
  return 0;
}
}  // namespace

int64_t peak_rss_bytes() { return read_status_kib("VmHWM"); }
int64_t current_rss_bytes() { return read_status_kib("VmRSS"); }

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

}  // namespace ht
