#include "core/memory_limit.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/memory.hpp"

namespace ht {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A non-negative decimal integer filling all of `s` (after trimming).
std::optional<uint64_t> parse_count(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// Calls fn(line) for each line of `text` until it returns true.
template <typename Fn>
void each_line(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    if (fn(line)) return;
    if (end == std::string_view::npos) return;
    text.remove_prefix(end + 1);
  }
}

// The whole of a small kernel file; nullopt when it cannot be read.
std::optional<std::string> read_small(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return s.str();
}

std::optional<int64_t> read_limit(const std::string& path) {
  const auto text = read_small(path);
  return text ? cgroup_limit_value(*text) : std::nullopt;
}

std::optional<int64_t> read_count(const std::string& path) {
  const auto text = read_small(path);
  if (!text) return std::nullopt;
  const auto v = parse_count(*text);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

// Active plus inactive file pages of a memory.stat text (`prefix` "total_"
// for v1's hierarchical figures, falling back to the cgroup's own).
int64_t reclaimable_pages(const std::string& stat_path, const char* prefix) {
  const auto stat = read_small(stat_path);
  if (!stat) return 0;
  auto value = [&](const std::string& key) {
    auto v = memory_stat_value(*stat, std::string(prefix) + key);
    if (!v && *prefix) v = memory_stat_value(*stat, key);
    return v.value_or(0);
  };
  return value("active_file") + value("inactive_file");
}

struct Candidate {
  int64_t available = 0;
  std::string source;
};

void consider(std::optional<Candidate>& best, Candidate c) {
  if (!best || c.available < best->available) best = std::move(c);
}

// v2: the process's cgroup and each ancestor with a memory.max below "max".
void cgroup_v2_limits(const std::string& root, const std::string& cgroups, std::optional<Candidate>& best) {
  const auto path = cgroup_v2_path(cgroups);
  if (!path) return;
  namespace fs = std::filesystem;
  fs::path dir = fs::path(root + "/sys/fs/cgroup");
  const size_t prefix = root.size();
  auto check = [&] {
    const auto limit = read_limit((dir / "memory.max").string());
    if (!limit) return;
    const int64_t usage = read_count((dir / "memory.current").string()).value_or(0);
    const int64_t avail = cgroup_available(*limit, usage, reclaimable_pages((dir / "memory.stat").string(), ""));
    consider(best, {avail, fmt::format("cgroup v2 memory.max {} of {}", format_bytes(static_cast<double>(*limit)),
                                       dir.string().substr(prefix))});
  };
  check();  // the mount's root (no memory.max there on a host; a container's own cgroup may be it)
  for (const fs::path& part : fs::path(*path).relative_path()) {
    if (part.empty() || part == "." || part == "..") continue;
    dir /= part;
    check();
  }
}

// v1: the memory controller's cgroup; hierarchical_memory_limit covers its
// ancestors. A container may see its own cgroup as the mount's root.
void cgroup_v1_limits(const std::string& root, const std::string& cgroups, std::optional<Candidate>& best) {
  const auto path = cgroup_v1_memory_path(cgroups);
  if (!path) return;
  namespace fs = std::filesystem;
  const fs::path mount = fs::path(root + "/sys/fs/cgroup/memory");
  fs::path dir = mount / fs::path(*path).relative_path();
  std::error_code ec;
  if (!fs::exists(dir / "memory.limit_in_bytes", ec)) dir = mount;
  std::optional<int64_t> limit = read_limit((dir / "memory.limit_in_bytes").string());
  const auto stat = read_small((dir / "memory.stat").string());
  if (stat)
    if (const auto h = memory_stat_value(*stat, "hierarchical_memory_limit"))
      if (const auto hl = cgroup_limit_value(std::to_string(*h))) limit = limit ? std::min(*limit, *hl) : *hl;
  if (!limit) return;
  const int64_t usage = read_count((dir / "memory.usage_in_bytes").string()).value_or(0);
  const int64_t avail = cgroup_available(*limit, usage, reclaimable_pages((dir / "memory.stat").string(), "total_"));
  consider(best, {avail, fmt::format("cgroup v1 memory limit {} of {}", format_bytes(static_cast<double>(*limit)),
                                     dir.string().substr(root.size()))});
}

}  // namespace

std::optional<int64_t> meminfo_bytes(std::string_view meminfo, std::string_view key) {
  std::optional<int64_t> out;
  each_line(meminfo, [&](std::string_view line) {
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') return false;
    std::string_view rest = trim(line.substr(key.size() + 1));
    int64_t unit = 1;
    if (rest.size() > 2 && (rest.substr(rest.size() - 2) == "kB" || rest.substr(rest.size() - 2) == "KB")) {
      unit = 1024;
      rest = trim(rest.substr(0, rest.size() - 2));
    }
    if (const auto v = parse_count(rest); v && *v <= static_cast<uint64_t>(INT64_MAX / unit))
      out = static_cast<int64_t>(*v) * unit;
    return true;
  });
  return out;
}

std::optional<int64_t> memory_stat_value(std::string_view stat, std::string_view key) {
  std::optional<int64_t> out;
  each_line(stat, [&](std::string_view line) {
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ' ') return false;
    if (const auto v = parse_count(line.substr(key.size() + 1)); v && *v <= static_cast<uint64_t>(INT64_MAX))
      out = static_cast<int64_t>(*v);
    return true;
  });
  return out;
}

std::optional<int64_t> cgroup_limit_value(std::string_view text) {
  const auto v = parse_count(text);
  if (!v || *v >= (uint64_t{1} << 60)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<std::string> cgroup_v2_path(std::string_view proc_self_cgroup) {
  std::optional<std::string> out;
  each_line(proc_self_cgroup, [&](std::string_view line) {
    if (line.substr(0, 3) != "0::") return false;
    out = std::string(trim(line.substr(3)));
    return true;
  });
  if (out && (out->empty() || out->front() != '/')) return std::nullopt;
  return out;
}

std::optional<std::string> cgroup_v1_memory_path(std::string_view proc_self_cgroup) {
  std::optional<std::string> out;
  each_line(proc_self_cgroup, [&](std::string_view line) {
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) return false;
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    bool memory = false;
    while (!controllers.empty() && !memory) {
      const size_t comma = controllers.find(',');
      memory = controllers.substr(0, comma) == "memory";
      controllers.remove_prefix(comma == std::string_view::npos ? controllers.size() : comma + 1);
    }
    if (!memory) return false;
    out = std::string(trim(line.substr(b + 1)));
    return true;
  });
  if (out && (out->empty() || out->front() != '/')) return std::nullopt;
  return out;
}

int64_t cgroup_available(int64_t limit, int64_t usage, int64_t reclaimable) {
  return std::max<int64_t>(0, limit - usage + std::max<int64_t>(reclaimable, 0));
}

HostMemoryLimit detect_host_memory_limit(int64_t own_bytes, const std::string& root) {
  std::optional<Candidate> best;
  if (const auto meminfo = read_small(root + "/proc/meminfo")) {
    if (const auto avail = meminfo_bytes(*meminfo, "MemAvailable")) {
      consider(best, {*avail, "MemAvailable"});
    } else if (const auto free = meminfo_bytes(*meminfo, "MemFree")) {  // kernels before 3.14
      consider(best, {*free + meminfo_bytes(*meminfo, "Cached").value_or(0), "MemFree + Cached"});
    }
  }
  if (const auto cgroups = read_small(root + "/proc/self/cgroup")) {
    cgroup_v2_limits(root, *cgroups, best);
    cgroup_v1_limits(root, *cgroups, best);
  }
  if (!best) return {0, "unknown (no /proc/meminfo)"};
  return {best->available + std::max<int64_t>(own_bytes, 0), best->source};
}

std::optional<int64_t> parse_memory_size(std::string_view text) {
  std::string s(trim(text));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "auto") return 0;
  size_t digits = 0;
  while (digits < s.size() && (std::isdigit(static_cast<unsigned char>(s[digits])) || s[digits] == '.')) ++digits;
  if (digits == 0) return std::nullopt;
  const std::string number = s.substr(0, digits);
  const std::string unit(trim(std::string_view(s).substr(digits)));
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(number.c_str(), &end);
  if (errno != 0 || end != number.c_str() + number.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  static const std::pair<const char*, double> units[] = {
      {"", 1024.0 * 1024 * 1024}, {"b", 1},          {"k", 1024.0},          {"kib", 1024.0},
      {"m", 1024.0 * 1024},       {"mib", 1024.0 * 1024}, {"g", 1024.0 * 1024 * 1024}, {"gib", 1024.0 * 1024 * 1024},
      {"t", 1024.0 * 1024 * 1024 * 1024}, {"tib", 1024.0 * 1024 * 1024 * 1024}};
  for (const auto& [name, scale] : units) {
    if (unit != name) continue;
    const double bytes = v * scale;
    if (bytes >= 9.0e18) return std::nullopt;
    return static_cast<int64_t>(std::llround(bytes));
  }
  return std::nullopt;
}

}  // namespace ht
