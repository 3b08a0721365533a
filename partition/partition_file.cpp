#include "partition/partition_file.hpp"

#include <atomic>
#include <bit>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"

namespace ht {
namespace {

std::optional<PartitionProblem> offsets_problem(const std::vector<int64_t>& off, size_t expected_size,
                                                int64_t last, const char* section) {
  if (off.size() != expected_size)
    return PartitionProblem{section, fmt::format("{} entries where {} were expected", off.size(), expected_size)};
  if (off.front() != 0) return PartitionProblem{section, "first offset must be 0"};
  if (off.back() != last)
    return PartitionProblem{section, fmt::format("last offset {} differs from the vertex count {}", off.back(), last)};
  for (size_t i = 1; i < off.size(); ++i)
    if (off[i] < off[i - 1]) return PartitionProblem{section, fmt::format("offsets decrease at entry {}", i)};
  return std::nullopt;
}

// The first problem in file order, found by a sequential scan; only run
// once the parallel pass below has found that there is one.
std::optional<PartitionProblem> first_permutation_problem(const std::vector<vid_t>& new_to_old, int64_t n) {
  std::vector<uint8_t> seen(n, 0);
  for (size_t i = 0; i < new_to_old.size(); ++i) {
    const vid_t old = new_to_old[i];
    if (old >= n) return PartitionProblem{"new_to_old", fmt::format("entry {} is {}, not < N = {}", i, old, n)};
    if (seen[old]) return PartitionProblem{"new_to_old", fmt::format("old id {} appears twice (entry {})", old, i)};
    seen[old] = 1;
  }
  return std::nullopt;
}

// Checks that new_to_old is a permutation of [0, n) and fills `inverse`
// (old_to_new) on the way, in parallel: ids in range, then inverse[old] = new
// for every entry, then each entry must find itself there (a repeated old id
// leaves only one of its entries). The stores of repeated ids race by
// design, hence relaxed atomics (plain stores on x86).
std::optional<PartitionProblem> permutation_problem(const std::vector<vid_t>& new_to_old, int64_t n,
                                                    std::vector<vid_t>& inverse) {
  if (static_cast<int64_t>(new_to_old.size()) != n)
    return PartitionProblem{"new_to_old", fmt::format("{} entries for {} vertices", new_to_old.size(), n)};
  if (first_bad(n, [&](int64_t i) { return new_to_old[i] >= n; }) >= 0) return first_permutation_problem(new_to_old, n);
  resize_for_overwrite(inverse, static_cast<size_t>(n));
  parallel_blocks(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::atomic_ref<vid_t>(inverse[new_to_old[i]]).store(static_cast<vid_t>(i), std::memory_order_relaxed);
  });
  const bool repeated = first_bad(n, [&](int64_t i) {
    return std::atomic_ref<vid_t>(inverse[new_to_old[i]]).load(std::memory_order_relaxed) != static_cast<vid_t>(i);
  }) >= 0;
  return repeated ? first_permutation_problem(new_to_old, n) : std::nullopt;
}

template <typename E>
E checked_enum(const ContainerReader& r, int slot, uint64_t count, const char* what) {
  const uint64_t v = r.meta(slot);
  if (v >= count) throw offset_error(r.path(), 64 + 8 * slot, fmt::format("unknown {} code {}", what, v));
  return static_cast<E>(v);
}

void read_params(const ContainerReader& r, Partition& p) {
  const uint64_t m = r.meta(kPartMetaParts), n = r.meta(kPartMetaChunks), nv = r.meta(kPartMetaVertices);
  if (m < 1 || n < 1 || m > static_cast<uint64_t>(kMaxVertices32) || n > static_cast<uint64_t>(kMaxVertices32))
    throw offset_error(r.path(), 64, fmt::format("bad partition/chunk counts m = {}, n = {}", m, n));
  if (nv > static_cast<uint64_t>(kMaxVertices32))
    throw offset_error(r.path(), 64 + 8 * kPartMetaVertices, fmt::format("vertex count {} exceeds 2^31 - 1", nv));
  PartitionParams& q = p.params;
  q.parts = static_cast<int>(m);
  q.chunks = static_cast<int>(n);
  // `automatic` (4) is never stored: a partition records the method that ran.
  q.method = checked_enum<PartitionMethod>(r, kPartMetaMethod, 4, "method");
  q.seed = r.meta(kPartMetaSeed);
  q.imbalance = static_cast<int>(r.meta(kPartMetaUfactor));
  q.objective = checked_enum<MetisObjective>(r, kPartMetaObjective, 2, "objective");
  q.algorithm = checked_enum<MetisAlgorithm>(r, kPartMetaAlgorithm, 2, "algorithm");
  q.vertex_weights = checked_enum<VertexWeights>(r, kPartMetaVertexWeights, 3, "vertex-weights");
  q.chunk_vertex_weight = std::bit_cast<double>(r.meta(kPartMetaChunkVertexWeight));
  // `automatic` (2) is never stored: a partition records how its chunks were made.
  q.chunking = checked_enum<ChunkingMode>(r, kPartMetaChunking, 2, "chunking");
  p.num_vertices = static_cast<int64_t>(nv);
  p.num_edges = static_cast<int64_t>(r.meta(kPartMetaEdges));
  p.graph_identity = {r.meta(kPartMetaGraphBytes), r.meta(kPartMetaGraphChecksum)};
}

template <typename T>
std::vector<T> copy_section(const ContainerReader& r, const char* name, uint64_t count) {
  return copy_to_vector(r.array<T>(name, count));
}

// Everything of find_partition_problem(); `inverse` receives old_to_new
// when new_to_old is a permutation.
std::optional<PartitionProblem> partition_problem(const Partition& p, std::vector<vid_t>& inverse) {
  const int64_t n = p.num_vertices;
  if (p.m() < 1 || p.n() < 1) return PartitionProblem{"part_offsets", "m and n must be at least 1"};
  if (auto q = permutation_problem(p.new_to_old, n, inverse)) return q;
  if (auto q = offsets_problem(p.part_offsets, static_cast<size_t>(p.m()) + 1, n, "part_offsets")) return q;
  if (auto q = offsets_problem(p.chunk_offsets, static_cast<size_t>(p.m()) * p.n() + 1, n, "chunk_offsets"))
    return q;
  for (int i = 0; i < p.m(); ++i)
    if (p.chunk_begin(i, 0) != p.part_offsets[i])
      return PartitionProblem{"chunk_offsets", fmt::format("chunk ({}, 0) starts at {} but partition {} at {}", i,
                                                           p.chunk_begin(i, 0), i, p.part_offsets[i])};
  return std::nullopt;
}

}  // namespace

std::optional<PartitionProblem> find_partition_problem(const Partition& p) {
  std::vector<vid_t> inverse;
  return partition_problem(p, inverse);
}

void write_partition(const std::string& path, const Partition& p) {
  if (auto q = find_partition_problem(p))
    throw file_error(path, fmt::format("internal error: refusing to write an invalid partition ({}: {})", q->section,
                                       q->what));
  const PartitionParams& q = p.params;
  if (q.method == PartitionMethod::automatic)
    throw file_error(path, "internal error: refusing to write a partition whose method was not resolved (auto)");
  if (q.chunking == ChunkingMode::automatic)
    throw file_error(path, "internal error: refusing to write a partition whose chunking was not resolved (auto)");
  ContainerWriter w(path, kPartitionMagic, kPartitionVersion);
  w.set_meta(kPartMetaParts, static_cast<uint64_t>(q.parts));
  w.set_meta(kPartMetaChunks, static_cast<uint64_t>(q.chunks));
  w.set_meta(kPartMetaVertices, static_cast<uint64_t>(p.num_vertices));
  w.set_meta(kPartMetaEdges, static_cast<uint64_t>(p.num_edges));
  w.set_meta(kPartMetaMethod, static_cast<uint64_t>(q.method));
  w.set_meta(kPartMetaSeed, q.seed);
  w.set_meta(kPartMetaUfactor, static_cast<uint64_t>(q.imbalance));
  w.set_meta(kPartMetaObjective, static_cast<uint64_t>(q.objective));
  w.set_meta(kPartMetaAlgorithm, static_cast<uint64_t>(q.algorithm));
  w.set_meta(kPartMetaVertexWeights, static_cast<uint64_t>(q.vertex_weights));
  w.set_meta(kPartMetaChunkVertexWeight, std::bit_cast<uint64_t>(q.chunk_vertex_weight));
  w.set_meta(kPartMetaGraphBytes, p.graph_identity.bytes);
  w.set_meta(kPartMetaGraphChecksum, p.graph_identity.checksum);
  w.set_meta(kPartMetaChunking, static_cast<uint64_t>(q.chunking));
  w.add<vid_t>("new_to_old", p.new_to_old);
  w.add<int64_t>("part_offsets", p.part_offsets);
  w.add<int64_t>("chunk_offsets", p.chunk_offsets);
  w.commit();
}

Partition read_partition(const std::string& path, ReadOptions opt) {
  ContainerReader r(path, kPartitionMagic, kPartitionVersion, opt);
  Partition p;
  read_params(r, p);
  const uint64_t m = static_cast<uint64_t>(p.m()), n = static_cast<uint64_t>(p.n());
  p.new_to_old = copy_section<vid_t>(r, "new_to_old", static_cast<uint64_t>(p.num_vertices));
  p.part_offsets = copy_section<int64_t>(r, "part_offsets", m + 1);
  p.chunk_offsets = copy_section<int64_t>(r, "chunk_offsets", m * n + 1);
  if (auto q = partition_problem(p, p.old_to_new)) r.fail_in(q->section, q->what);
  return p;
}

void check_partition_matches(const Partition& p, const GraphFile& graph) {
  const FileIdentity id = graph.identity();
  if (p.graph_identity == id && p.num_vertices == graph.view().num_vertices &&
      p.num_edges == graph.view().num_edges)
    return;
  throw file_error(graph.path(),
                   fmt::format("this graph is not the one the partition was made from (partition: {} vertices, {} "
                               "edges, graph file of {} bytes with checksum {:016x}; this file: {} vertices, {} "
                               "edges, {} bytes, checksum {:016x}); re-run ht-partition on this graph",
                               p.num_vertices, p.num_edges, p.graph_identity.bytes, p.graph_identity.checksum,
                               graph.view().num_vertices, graph.view().num_edges, id.bytes, id.checksum));
}

}  // namespace ht
