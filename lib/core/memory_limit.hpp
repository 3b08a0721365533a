#pragma once
// How much host memory this process may use (Linux): the smallest of what
// /proc/meminfo says is available and what the process's memory cgroups (v2
// memory.max, v1 memory.limit_in_bytes and hierarchical_memory_limit) leave,
// plus what the process holds already. The readers take the files' text, so
// that every format quirk is testable without the files.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ht {

struct HostMemoryLimit {
  int64_t bytes = 0;   // 0: unknown (no file could be read)
  std::string source;  // where the figure came from, for messages ("MemAvailable", "cgroup v2 memory.max of ...")
};

// "Key:   123 kB" line of /proc/meminfo, in bytes.
std::optional<int64_t> meminfo_bytes(std::string_view meminfo, std::string_view key);

// "key value" line of a cgroup memory.stat file.
std::optional<int64_t> memory_stat_value(std::string_view stat, std::string_view key);

// A limit file's value: a byte count, or nullopt for "max" (v2), for v1's
// "unlimited" (a page-rounded 2^63 - 1, anything from 2^60 up) and for text
// that is not a number.
std::optional<int64_t> cgroup_limit_value(std::string_view text);

// The process's cgroup path from /proc/self/cgroup: the v2 entry ("0::/a/b")
// or the v1 entry whose controller list names `memory` ("4:memory:/a/b").
std::optional<std::string> cgroup_v2_path(std::string_view proc_self_cgroup);
std::optional<std::string> cgroup_v1_memory_path(std::string_view proc_self_cgroup);

// What one cgroup leaves: its limit minus its usage plus the page cache it
// could drop (active and inactive file pages), never below 0.
int64_t cgroup_available(int64_t limit, int64_t usage, int64_t reclaimable);

// The host memory this process may still take, from the files under `root`
// ("" = the real /proc and /sys; tests point it at a copy), plus `own_bytes`
// (what the process holds already: its RSS). The smallest of MemAvailable
// and, for each memory cgroup of the process and its ancestors, what it
// leaves; `source` names the one that decided.
HostMemoryLimit detect_host_memory_limit(int64_t own_bytes, const std::string& root = "");

// "--host-mem" values: "auto" or "0" = detect (returns 0); a number with an
// optional binary unit (B, K/KiB, M/MiB, G/GiB, T/TiB, any case); a bare
// number is GiB, as --gpu-mem's. nullopt for anything else.
std::optional<int64_t> parse_memory_size(std::string_view text);

}  // namespace ht
