#include "train/job_processes.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace ht {
namespace {

template <typename T>
std::vector<T> gather(Transport& t, const T& mine) {
  std::vector<T> all(static_cast<size_t>(t.size()));
  allgather_values<T>(t, std::span<const T>(&mine, 1), std::span<T>(all));
  return all;
}

}  // namespace

void check_same_inputs(Transport* t, std::span<const std::pair<std::string, FileIdentity>> files) {
  if (!t) return;
  for (const auto& [path, id] : files) {
    const std::vector<FileIdentity> all = gather(*t, id);
    for (int r = 1; r < t->size(); ++r)
      HT_CHECK(all[static_cast<size_t>(r)] == all[0],
               "{}: process {} read a different file than process 0 ({} bytes, checksum {:016x} against {} bytes, "
               "{:016x}): every process must read the same files (a shared path)",
               path, r, all[static_cast<size_t>(r)].bytes, all[static_cast<size_t>(r)].checksum, all[0].bytes,
               all[0].checksum);
  }
}

void check_same_options(Transport* t, std::span<const JobOption> options) {
  if (!t) return;
  // The count first: a process of another build (another list) differs there.
  const size_t k = options.size() + 1;
  std::vector<uint64_t> mine, all(k * static_cast<size_t>(t->size()));
  mine.push_back(options.size());
  for (const JobOption& o : options) mine.push_back(xxh64(o.value.data(), o.value.size()));
  allgather_values<uint64_t>(*t, mine, all);
  const auto value = [&](int r, size_t i) { return all[static_cast<size_t>(r) * k + i]; };
  for (int r = 1; r < t->size(); ++r)
    HT_CHECK(value(r, 0) == value(0, 0),
             "process {} compares {} options and process 0 {}: every process of a job must run the same ht-train",
             r, value(r, 0), value(0, 0));
  std::string differ;
  for (size_t i = 0; i < options.size(); ++i) {
    std::vector<int> ranks;
    for (int r = 1; r < t->size(); ++r)
      if (value(r, i + 1) != value(0, i + 1)) ranks.push_back(r);
    if (ranks.empty()) continue;
    differ += fmt::format("{}{} (process{} {} against process 0)", differ.empty() ? "" : ", ", options[i].name,
                          ranks.size() > 1 ? "es" : "", fmt::join(ranks, ", "));
  }
  HT_CHECK(differ.empty(),
           "the job's processes were given different options: {}; every process of a job must be given the same "
           "training options",
           differ);
}

int64_t max_over_processes(Transport* t, int64_t mine) {
  if (!t) return mine;
  const std::vector<int64_t> all = gather(*t, mine);
  return *std::max_element(all.begin(), all.end());
}

LinkCounters sum_over_processes(Transport* t, const LinkCounters& mine) {
  if (!t) return mine;
  static_assert(sizeof(LinkCounters) % sizeof(int64_t) == 0);
  constexpr size_t kFields = sizeof(LinkCounters) / sizeof(int64_t);
  LinkCounters sum{};
  auto* out = reinterpret_cast<int64_t*>(&sum);
  for (const LinkCounters& c : gather(*t, mine)) {
    const auto* in = reinterpret_cast<const int64_t*>(&c);
    for (size_t k = 0; k < kFields; ++k) out[k] += in[k];
  }
  return sum;
}

std::vector<float> gather_held_rows(Transport* t, std::vector<float> rows, int64_t cols,
                                    std::pair<int64_t, int64_t> held) {
  if (!t) return rows;
  // Blocks of the same size (the largest process's rows) for allgather.
  const std::vector<std::pair<int64_t, int64_t>> ranges = gather(*t, held);
  int64_t most = 0;
  for (const auto& [b, e] : ranges) most = std::max(most, e - b);
  std::vector<float> mine(static_cast<size_t>(most * cols)), all(static_cast<size_t>(most * cols * t->size()));
  std::copy(rows.begin() + held.first * cols, rows.begin() + held.second * cols, mine.begin());
  allgather_values<float>(*t, mine, all);
  for (int r = 0; r < t->size(); ++r) {
    const auto [b, e] = ranges[static_cast<size_t>(r)];
    std::copy(all.begin() + r * most * cols, all.begin() + (r * most + (e - b)) * cols, rows.begin() + b * cols);
  }
  return rows;
}

}  // namespace ht
