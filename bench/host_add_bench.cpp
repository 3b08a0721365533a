// ht-bench-host-add: the host's share of a gradient return (Trainer::issue_return's
// host task) — a staged piece of rows added into rows of a store matrix — with the
// piece's rows in plan order (random), ascending (DevicePlan's staged order since
// sort_staged_returns), and ascending with the write prefetch the trainer uses.
// Median of --reps runs per variant after one warm-up, on OMP_NUM_THREADS threads.
// Usage: ht-bench-host-add [--rows N] [--piece K] [--width W] [--dtype bf16|fp32] [--reps R]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/host_rows.hpp"

namespace {

using ht::HostMat;

double run(const HostMat& dst, const HostMat& src, const std::vector<uint32_t>& rows, bool prefetch) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t k = static_cast<int64_t>(rows.size());
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < k; ++r) {
    if (prefetch && r + 16 < k) ht::prefetch_row(dst, rows[r + 16]);
    ht::add_row(dst, rows[r], src, r);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 8'000'000, k = 1 << 20, w = 128, reps = 7;
  std::string dtype = "bf16";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--rows") n = std::stoll(v);
    else if (a == "--piece") k = std::stoll(v);
    else if (a == "--width") w = std::stoll(v);
    else if (a == "--reps") reps = std::stoll(v);
    else if (a == "--dtype") dtype = v;
    else { std::fprintf(stderr, "ht-bench-host-add: unknown option %s\n", a.c_str()); return 2; }
  }
  if (n <= 0 || k <= 0 || w <= 0 || reps <= 0 || k > n || (dtype != "bf16" && dtype != "fp32")) {
    std::fprintf(stderr, "ht-bench-host-add: need 0 < piece <= rows, width, reps > 0, dtype bf16 or fp32\n");
    return 2;
  }
  const ht::StoreDtype t = dtype == "bf16" ? ht::StoreDtype::bf16 : ht::StoreDtype::f32;
  const int64_t eb = ht::dtype_bytes(t);
  std::vector<std::byte> dst_mem(static_cast<size_t>(n * w * eb)), src_mem(static_cast<size_t>(k * w * eb));
  std::mt19937_64 g(1);
  for (auto& b : src_mem) b = static_cast<std::byte>(g() & 0x3f);  // small finite values in either dtype
  for (auto& b : dst_mem) b = static_cast<std::byte>(g() & 0x3f);
  const HostMat dst{dst_mem.data(), n, w, -1, t}, src{src_mem.data(), k, w, -1, t};
  std::vector<uint32_t> random(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) random[v] = static_cast<uint32_t>(v);
  std::shuffle(random.begin(), random.end(), g);
  random.resize(static_cast<size_t>(k));  // k distinct rows, as a step's flush list
  std::vector<uint32_t> sorted = random;
  std::sort(sorted.begin(), sorted.end());
  std::printf("host adds: %lld rows of %lld x %s into %lld, %d threads (median of %lld)\n", static_cast<long long>(k),
              static_cast<long long>(w), dtype.c_str(), static_cast<long long>(n), omp_get_max_threads(),
              static_cast<long long>(reps));
  const struct { const char* name; const std::vector<uint32_t>* rows; bool prefetch; } variants[] = {
      {"plan order (random)", &random, false}, {"ascending", &sorted, false}, {"ascending + prefetch", &sorted, true}};
  for (const auto& v : variants) {
    run(dst, src, *v.rows, v.prefetch);
    std::vector<double> s;
    for (int64_t r = 0; r < reps; ++r) s.push_back(run(dst, src, *v.rows, v.prefetch));
    std::sort(s.begin(), s.end());
    const double med = s[s.size() / 2];
    std::printf("  %-22s %8.2f ms  %6.2f GB/s of staged bytes\n", v.name, med * 1e3,
                static_cast<double>(k * w * eb) / med / 1e9);
  }
  return 0;
}
