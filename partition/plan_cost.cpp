#include "partition/plan_cost.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <sstream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "partition/sorted_sets.hpp"

namespace ht {
namespace {
// Below this many rows of work a parallel region costs more than it saves.
constexpr int64_t kParallelMin = int64_t{1} << 15;

int64_t total_size(const ChunkNeighbors& sets) {
  int64_t t = 0;
  for (const auto& s : sets) t += static_cast<int64_t>(s.size());
  return t;
}
}  // namespace

std::vector<std::vector<vid_t>> batch_unions(const ChunkNeighbors& chunk_nbr, const BatchOrder& order) {
  HT_CHECK(order.valid() && chunk_nbr.size() == order.chunk.size(), "batch order does not match {} chunks",
           chunk_nbr.size());
  const int m = order.m, n = order.n;
  std::vector<std::vector<vid_t>> unions(n);
  // Batches side by side when there are enough of them for the threads;
  // else one after another, each union by all threads (sorted_sets.hpp).
  const bool by_batch = total_size(chunk_nbr) >= kParallelMin && n >= omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) if (by_batch)
  for (int j = 0; j < n; ++j) {
    std::vector<std::span<const vid_t>> lists;
    for (int i = 0; i < m; ++i) lists.push_back(chunk_nbr[static_cast<size_t>(i) * n + order.at(j, i)]);
    unions[j] = sorted_sets::unite(lists);
  }
  return unions;
}

PlanVolumes volumes_of(const ChunkNeighbors& chunk_nbr, const std::vector<std::vector<vid_t>>& unions) {
  PlanVolumes v;
  v.v_ori = total_size(chunk_nbr);
  const int n = static_cast<int>(unions.size());
  int64_t p2p = 0, ru = 0;
  const bool by_batch = v.v_ori >= kParallelMin && n >= omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : p2p, ru) if (by_batch)
  for (int j = 0; j < n; ++j) {
    const auto size = static_cast<int64_t>(unions[j].size());
    p2p += size;
    ru += j == 0 ? size : size - sorted_sets::intersection_size(unions[j], unions[j - 1]);
  }
  v.v_p2p = p2p;
  v.v_ru = ru;
  return v;
}

PlanVolumes order_volumes(const ChunkNeighbors& chunk_nbr, const BatchOrder& order) {
  return volumes_of(chunk_nbr, batch_unions(chunk_nbr, order));
}

namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

double parse_throughput(const std::string& path, int64_t line, const std::string& key, const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v <= 0)
    throw line_error(path, line, "'" + key + "' needs a positive number of bytes/s, got '" + text + "'");
  return v;
}
}  // namespace

CostProfile read_cost_profile(const std::string& path, CostProfile base) {
  std::istringstream in(read_text_file(path));
  std::string raw;
  int64_t line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string text = trim(raw.substr(0, raw.find('#')));
    if (text.empty()) continue;
    const auto eq = text.find('=');
    if (eq == std::string::npos) throw line_error(path, line, "expected 'key = value', got '" + text + "'");
    const std::string key = trim(text.substr(0, eq)), value = trim(text.substr(eq + 1));
    double* target = key == "t_hd" ? &base.t_hd : key == "t_dd" ? &base.t_dd : key == "t_ru" ? &base.t_ru : nullptr;
    if (!target) throw line_error(path, line, "unknown key '" + key + "' (expected t_hd, t_dd or t_ru)");
    *target = parse_throughput(path, line, key, value);
  }
  return base;
}

}  // namespace ht
