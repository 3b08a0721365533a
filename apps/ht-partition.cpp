// ht-partition: METIS, multilevel (or random/range) partitioning into m
// partitions, one per GPU, renumbering, and chunking into n chunks per
// partition, balanced ranges or by locality (SPEC §4). Argument parsing and wiring only; the work
// is in partition/.
#include "cli/cli.hpp"
#include "partition/partition_names.hpp"
#include "partition/partition_tool.hpp"
#include "train_options.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "Partition a graph for multi-GPU, out-of-GPU-memory training: m partitions (one per GPU; METIS k-way, or "
      "the parallel multilevel partitioner on graphs too large for METIS) each cut into n computation-balanced "
      "chunks of contiguous destination ranges (after renumbering; by default the blocks of a partition of each "
      "partition, for locality). Writes the partition file (the renumbering and the ranges; "
      "docs/FORMATS.md), prints per-chunk sizes, edge cut, balance and the neighbor replication factor alpha. No "
      "renumbered graph is written: ht-reorganize and ht-train apply the renumbering when they load the graph.",
      "ht-partition"};
  ht::cli::CommonOptions common;
  ht::cli::setup_app(app, common);
  ht::PartitionToolOptions opt;
  ht::PartitionParams& p = opt.params;
  p.method = ht::PartitionMethod::automatic;
  p.chunking = ht::ChunkingMode::automatic;
  app.add_option("-g,--graph", opt.graph_path, "Input graph file (.htg)")->required();
  app.add_option("-o,--output", opt.output_path, "Output partition file (.htp), written atomically")->required();
  app.add_option("-m,--parts", p.parts, "Number of partitions m (one per GPU); 1 skips partitioning")
      ->check(ht::cli::in_range(1, 1 << 20));
  std::string chunks = "1";
  app.add_option("-n,--chunks", chunks,
                 "Chunks per partition n (contiguous destination ranges), or auto: the fewest whose GPU working set "
                 "in ht-train (what its memory check counts) plus a GPU cache tier fits --gpu-mem; the choice "
                 "depends on the options of the group 'GPU memory for --chunks auto' (ht-train's model and "
                 "communication options: give the ones the training run will use) and is logged with its reason")
      ->check(ht::tools::chunks_value())
      ->capture_default_str();
  ht::cli::add_enum(app, "--chunking", p.chunking, ht::chunking_mode_names(),
                    "How each partition is cut into its n chunks (all balanced on computation weight, in-edges + "
                    "chunk-vertex-weight per vertex). balanced: n contiguous ranges of the partition in the input "
                    "order, each within one vertex's weight of the mean (the paper's chunking; as good as the input "
                    "order's locality). locality: the n blocks of a METIS or multilevel partition of the "
                    "partition (the graph itself when m = 1; --method picks the partitioner, auto by size), "
                    "renumbered into ranges, within --imbalance: far fewer neighbor rows per chunk (alpha) on "
                    "graphs whose ids are not in locality order. auto: locality for --method auto, metis and "
                    "multilevel, kept for a partition only where its chunks read fewer neighbor rows than the "
                    "balanced ranges would; balanced for range and random");
  ht::cli::add_enum(app, "--method", p.method, ht::partition_method_names(),
                    "auto: metis where METIS takes the graph quickly (symmetrized adjacency within its 32-bit "
                    "idx_t and at most 2^22 entries, memory within MemAvailable), multilevel otherwise (faster there at a cut "
                    "within 5% of METIS's, docs/PARTITION.md); the pick "
                    "and why are logged. metis: METIS on the symmetrized graph (fewest cut edges; single-threaded, "
                    "slowest, most memory; at most 2^31 - 1 adjacency entries). multilevel: parallel (OpenMP) "
                    "label-propagation coarsening, METIS on the coarse graph, label-propagation refinement; 64-bit, "
                    "memory close to the graph's size, any size; the same partition for a seed whatever the thread "
                    "count. range: contiguous old-id ranges (fast, keeps the input order). random: seeded random "
                    "balanced assignment (baseline)");
  ht::cli::add_enum(app, "--algorithm", p.algorithm, ht::metis_algorithm_names(),
                    "METIS algorithm: kway (METIS_PartGraphKway) or recursive (recursive bisection); multilevel "
                    "uses it on its coarsest graph");
  ht::cli::add_enum(app, "--objective", p.objective, ht::metis_objective_names(),
                    "METIS objective: cut (edge cut) or vol (total communication volume; kway only)");
  ht::cli::add_enum(app, "--vertex-weights", p.vertex_weights, ht::vertex_weights_names(),
                    "Balance partitions on: none (vertex counts), degree (in-edges + chunk-vertex-weight per "
                    "vertex: training computation), train (degree and, as a 2nd METIS constraint, the number "
                    "of training vertices; multilevel, random and range balance degree only)");
  app.add_option("--imbalance", p.imbalance,
                 "Allowed partition imbalance in 1/1000 (METIS ufactor; 30 = 3%; multilevel: every partition's "
                 "weight <= (1 + U/1000) x total / m)")
      ->check(ht::cli::in_range(1, 1e6));
  app.add_option("--seed", p.seed, "Seed of METIS (low 31 bits), of --method multilevel and of --method random")
      ->check(ht::cli::unsigned_integer());
  app.add_option("--chunk-vertex-weight", p.chunk_vertex_weight,
                 "Computation weight of one vertex relative to one in-edge, for chunk (and degree) balancing")
      ->check(ht::cli::in_range(0, 1e6));
  app.add_option("--stats-json", opt.stats_json_path, "Also write the statistics as one JSON object to this file");
  app.add_flag_callback("--no-verify", [&] { opt.verify = false; }, "Skip the graph's section checksums (huge files)");
  ht::tools::ChunkSizingOptions sizing;
  ht::tools::add_chunk_sizing_options(app, sizing);
  return ht::cli::run(app, common, argc, argv, [&] {
    p.chunks = ht::tools::chunk_count(chunks);
    ht::tools::wire_chunk_choice(app, sizing, opt);
    ht::run_partition_tool(opt);
  });
}
