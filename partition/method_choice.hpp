#pragma once
// --method auto: METIS where it fits in its index width, in time and in
// memory; the multilevel partitioner otherwise.
#include <cstdint>
#include <string>

#include "graph/graph.hpp"
#include "partition/partition.hpp"

namespace ht {

// Above this many symmetrized adjacency entries --method auto picks the
// multilevel partitioner: there it was faster than METIS already on one
// thread, at a cut within 5 % of METIS's (issue 33; community, web and R-MAT
// graphs of 1-24 M entries on the development VM: the crossover is at
// 1-4 M entries, and the multilevel partitioner gains with every core while
// METIS is single-threaded). Below it both take about a second and METIS's
// cut is the reference, so small graphs (the whole test suite) keep exactly
// METIS's partitions. docs/PARTITION.md has the measurements.
inline constexpr int64_t kAutoMetisMaxEntries = int64_t{1} << 22;

struct MethodChoice {
  PartitionMethod method = PartitionMethod::metis;
  std::string reason;  // one line: why
};

// METIS's adjacency length for g, from the header alone: E for a graph
// marked symmetric, else 2·E (an upper bound: the union of in- and
// out-neighbors without self-loops and duplicates).
int64_t metis_adjacency_estimate(const GraphView& g);

// Memory the METIS path needs at its peak: its 32-bit graph plus METIS's own
// work arrays (measured: about 55-65 bytes per adjacency entry on top).
int64_t metis_memory_estimate(const GraphView& g);

// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
int64_t available_memory_bytes();

// The method for params.method == automatic: metis when m = 1 and the chunks
// are balanced ranges (nothing is partitioned; the file is the same as
// METIS's), else (m >= 2, or m = 1 with locality chunking, where the chunks
// are the one partition made; also for each partition's chunks) metis when
// N and the
// estimated adjacency fit idx_t, the adjacency is at most
// kAutoMetisMaxEntries and the memory estimate fits `available_bytes`
// (0: unknown, not checked); multilevel otherwise.
MethodChoice choose_partition_method(const GraphView& g, const PartitionParams& params, int64_t available_bytes);

}  // namespace ht
