#pragma once
// Process memory figures read from /proc/self/status (Linux).
#include <cstdint>
#include <string>

namespace ht {

int64_t peak_rss_bytes();     // VmHWM: the high-water mark of resident memory
int64_t current_rss_bytes();  // VmRSS
std::string format_bytes(double bytes);  // "1.23 GiB"

}  // namespace ht
