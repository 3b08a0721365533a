#include "partition/metis_partition.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <mutex>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"

namespace ht {
namespace {

static_assert(sizeof(idx_t) == 4 || sizeof(idx_t) == 8, "unexpected METIS idx_t width");

// Resets the kernel's resident-set high-water mark (VmHWM) of this process
// (Linux >= 4.0: "5" > /proc/self/clear_refs), so that the peak read after
// METIS is METIS's own. False when not permitted.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

const char* metis_status_text(int status) {
  switch (status) {
    case METIS_ERROR_INPUT: return "METIS rejected its input (METIS_ERROR_INPUT)";
    case METIS_ERROR_MEMORY: return "METIS ran out of memory (METIS_ERROR_MEMORY); try --method random or range";
    default: return "METIS failed (METIS_ERROR)";
  }
}

void set_metis_options(const PartitionParams& params, idx_t* options) {
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_SEED] = static_cast<idx_t>(params.seed & 0x7FFFFFFF);
  options[METIS_OPTION_UFACTOR] = params.imbalance;
  options[METIS_OPTION_OBJTYPE] = params.objective == MetisObjective::vol ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
}

}  // namespace

std::vector<idx_t> metis_vertex_weights(const GraphView& g, const PartitionParams& params, idx_t& ncon) {
  const int64_t n = g.num_vertices;
  ncon = 1;
  if (params.vertex_weights == VertexWeights::none) return {};
  const bool train = params.vertex_weights == VertexWeights::train;
  if (train && g.split.empty())
    throw option_error("--vertex-weights", "'train' needs the graph's split section, and this graph has none");
  ncon = train ? 2 : 1;
  // The sum of each constraint must fit in idx_t: scale the computation
  // weight down when E + N·c is too large (keeps relative weights).
  const double total = static_cast<double>(g.num_edges) + static_cast<double>(n) * params.chunk_vertex_weight;
  const double limit = static_cast<double>(metis_index_limit()) / 2;
  const double scale = total > limit ? limit / total : 1.0;
  std::vector<idx_t> w(static_cast<size_t>(n) * ncon);
#pragma omp parallel for schedule(static, 4096)
  for (int64_t v = 0; v < n; ++v) {
    const double c = (static_cast<double>(g.in_degree(v)) + params.chunk_vertex_weight) * scale;
    w[static_cast<size_t>(v) * ncon] = static_cast<idx_t>(std::max(1.0, std::round(c)));
    if (train) w[static_cast<size_t>(v) * ncon + 1] = g.split[v] == static_cast<uint8_t>(Split::train) ? 1 : 0;
  }
  return w;
}

MetisResult run_metis(MetisGraph& mg, std::vector<idx_t>& vwgt, idx_t ncon, const PartitionParams& params,
                      std::span<idx_t> adjwgt) {
  const bool recursive = params.algorithm == MetisAlgorithm::recursive;
  HT_ASSERT(adjwgt.empty() || static_cast<int64_t>(adjwgt.size()) == mg.adjacency_length());
  if (recursive && params.objective == MetisObjective::vol)
    throw option_error("--objective", "'vol' is only available with k-way METIS (--algorithm kway)");
  idx_t nvtxs = static_cast<idx_t>(mg.num_vertices());
  idx_t nparts = params.parts;
  idx_t options[METIS_NOPTIONS];
  set_metis_options(params, options);
  std::vector<idx_t> part(mg.num_vertices(), 0);
  idx_t objval = 0;

  // One METIS call at a time in the process: the multilevel partitioner's
  // runs on several partitions side by side (chunking.cpp) each end in METIS
  // on their coarsest level, and the high-water mark reset below is
  // process-wide (METIS's thread safety is not relied on either).
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> lock(one_at_a_time);
  MetisResult r;
  r.process_peak_before = peak_rss_bytes();
  r.peak_is_exact = reset_peak_rss();
  const int64_t rss_before = current_rss_bytes();
  Timer t;
  const double cpu_before = thread_cpu_seconds();
  log::info("METIS {}: {} vertices, {} adjacency entries, {} parts, ufactor {}, seed {}",
            recursive ? "recursive bisection" : "k-way", nvtxs, mg.adjacency_length(), nparts, params.imbalance,
            options[METIS_OPTION_SEED]);
  auto* call = recursive ? METIS_PartGraphRecursive : METIS_PartGraphKway;
  const int status = call(&nvtxs, &ncon, mg.xadj.data(), mg.adjncy.data(), vwgt.empty() ? nullptr : vwgt.data(),
                          nullptr, adjwgt.empty() ? nullptr : adjwgt.data(), &nparts, nullptr, nullptr, options,
                          &objval, part.data());
  r.seconds = t.seconds();
  r.cpu_seconds = thread_cpu_seconds() - cpu_before;
  r.peak_bytes = std::max<int64_t>(0, peak_rss_bytes() - rss_before);
  if (status != METIS_OK) throw Error(metis_status_text(status));
  r.objective_value = objval;
  r.part_of.assign(part.begin(), part.end());
  return r;
}

}  // namespace ht
