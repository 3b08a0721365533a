#include "partition/method_choice.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/memory.hpp"
#include "core/memory_limit.hpp"
#include "partition/metis_graph.hpp"

namespace ht {
namespace {

// METIS's own memory per adjacency entry on top of its input: measured with
// ht-partition's metis_peak_bytes, 54 B on the 2.45 M-vertex community graph
// (122 M entries) and 63 B on a 200 k-vertex one (6 M entries); rounded up.
constexpr int64_t kMetisBytesPerEntry = 64;

}  // namespace

int64_t metis_adjacency_estimate(const GraphView& g) {
  return g.flags.symmetric ? g.num_edges : 2 * g.num_edges;
}

int64_t metis_memory_estimate(const GraphView& g) {
  const int64_t a = metis_adjacency_estimate(g);
  const int64_t n = g.num_vertices;
  // Building: the transpose (8 B per vertex + 4 B per edge) and 8-byte row
  // lengths beside the 32-bit graph (4 B per vertex + 4 B per entry); then
  // METIS with that graph and the vertex weights.
  const int64_t build = 8 * n + 4 * g.num_edges + 8 * n + 4 * n + 4 * a;
  const int64_t run = 4 * n + 4 * a + 4 * n + kMetisBytesPerEntry * a;
  return std::max(build, run);
}

// The same figure ht-train's host memory check uses (MemAvailable and the
// process's memory cgroups), without adding back what the process holds:
// METIS's memory comes on top of the graph already read.
int64_t available_memory_bytes() { return detect_host_memory_limit(0).bytes; }

MethodChoice choose_partition_method(const GraphView& g, const PartitionParams& params, int64_t available_bytes) {
  MethodChoice c;
  // With m = 1 the only partition made is the chunks' (locality chunking):
  // the same rules pick its partitioner, since they depend on the graph's
  // size, not on the number of blocks.
  const bool chunks_only = params.parts == 1;
  if (chunks_only && (params.chunks == 1 || params.chunking == ChunkingMode::balanced)) {
    c.reason = "m = 1: nothing to partition (the same result as METIS)";
    return c;
  }
  const int64_t a = metis_adjacency_estimate(g);
  const std::string what = fmt::format("{}{} adjacency entries{}",
                                       chunks_only ? fmt::format("m = 1, chunks by locality (n = {}): ", params.chunks)
                                                   : std::string(),
                                       a, g.flags.symmetric ? "" : " at most");
  c.method = PartitionMethod::multilevel;
  if (g.num_vertices > metis_index_limit() || a > metis_index_limit()) {
    c.reason = fmt::format("{} exceed METIS's {}-bit idx_t (at most {})", what, 8 * sizeof(idx_t), metis_index_limit());
    return c;
  }
  if (a > kAutoMetisMaxEntries) {
    c.reason = fmt::format("{}: more than {}, where METIS takes too long (the multilevel partitioner is faster at a "
                           "cut within 5% of METIS's)",
                           what, kAutoMetisMaxEntries);
    return c;
  }
  const int64_t need = metis_memory_estimate(g);
  if (available_bytes > 0 && need > available_bytes) {
    c.reason = fmt::format("METIS would need about {} of memory for {}, more than the {} available",
                           format_bytes(static_cast<double>(need)), what,
                           format_bytes(static_cast<double>(available_bytes)));
    return c;
  }
  c.method = PartitionMethod::metis;
  const std::string of_available =
      available_bytes > 0 ? fmt::format(" of {} available", format_bytes(static_cast<double>(available_bytes))) : "";
  c.reason = fmt::format("{} fit METIS's idx_t, at most {}, and about {} of memory{}", what, kAutoMetisMaxEntries,
                         format_bytes(static_cast<double>(need)), of_available);
  return c;
}

}  // namespace ht
