// ht-convert: raw inputs or synthetic generators -> hongtu graph file (.htg),
// and --inspect to validate a graph file and print its statistics.
// Argument parsing and wiring only; the logic lives in datasets/.
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "datasets/convert.hpp"
#include "datasets/convert_generate.hpp"
#include "datasets/inspect.hpp"

namespace {

using ht::data::GeneratorKind;
using ht::data::HeaderMode;
using ht::data::InputFormat;
using ht::data::SelfLoopChoice;

// Everything the options bind to. The options --format and --generate share
// bind to `convert` and are copied into `generate` for --generate.
struct Context {
  ht::cli::CommonOptions common;
  ht::data::ConvertOptions convert;
  ht::data::GenerateOptions generate;
  ht::data::InspectOptions inspect;
  std::string format, generator;
  int header = 0;  // > 0 --header, < 0 --no-header, 0 detect
  std::optional<int32_t> classes, feature_dim;
};

const std::map<std::string, InputFormat> kFormats{{"edgelist", InputFormat::edgelist},
                                                  {"mtx", InputFormat::mtx},
                                                  {"planetoid", InputFormat::planetoid},
                                                  {"facebook", InputFormat::facebook},
                                                  {"npz", InputFormat::npz},
                                                  {"ogb", InputFormat::ogb},
                                                  {"npy-edges", InputFormat::npy_edges}};
const std::map<std::string, GeneratorKind>& kGenerators = ht::data::generator_names();
const std::map<std::string, SelfLoopChoice> kSelfLoops{{"auto", SelfLoopChoice::automatic},
                                                       {"keep", SelfLoopChoice::keep},
                                                       {"drop", SelfLoopChoice::drop},
                                                       {"add", SelfLoopChoice::add}};

template <typename T>
std::vector<std::string> names_of(const std::map<std::string, T>& m) {
  std::vector<std::string> names;
  for (const auto& [name, value] : m) names.push_back(name);
  return names;
}

void add_input_options(CLI::App& app, Context& c) {
  auto* g = app.add_option_group("Input (--format)");
  auto& o = c.convert;
  g->add_option("--format", c.format,
                "Input format: edgelist (SNAP/CSV text), mtx (Matrix Market), planetoid (folder of ind.<name>.* "
                "pickles), facebook (MUSAE folder: <name>_edges.csv, _features.json, _target.csv), npz "
                "(PyG arrays, SciPy sparse adjacency, cora_ml-style or heterophilous benchmark archive), ogb (OGB "
                "node-property folder: raw/*.csv.gz or raw/data.npz, split/<name>/), npy-edges (.npy edge array "
                "(E, 2) or (2, E)). Text and CSV inputs may be gzip-compressed")
      ->check(ht::cli::one_of(names_of(kFormats)));
  g->add_option("-i,--input", o.input, "Input file (edgelist, mtx, npz, npy-edges) or folder (planetoid, facebook, ogb)");
  g->add_option("--name", o.name,
                "Dataset name: planetoid prefix ind.<name>.* (default: the only one in the folder); MUSAE file "
                "prefix (default: facebook)");
  g->add_flag("--header,!--no-header", c.header,
              "Edge lists: skip the first non-comment line (--header) or never (--no-header); default: skipped "
              "for .csv files when its first token is not a number");
  g->add_option("--num-vertices", o.num_vertices, "Edge lists: vertex count N (ids must be < N; no relabeling; -1 = "
                                                  "from the vertex arrays or the ids)")
      ->check(ht::cli::in_range(-1, 9.2e18));
  g->add_flag("--keep-ids", o.keep_ids, "Edge lists: never relabel; N = max id + 1 (gaps become isolated vertices)");
  g->add_flag("--ignore-weights", o.ignore_weights, "Ignore a third (weight) column / Matrix Market values");
  g->add_flag("--allow-nonfinite", o.allow_nonfinite,
              "Keep NaN/Inf features and edge weights (and f8 values beyond the float32 range, which become Inf); "
              "refused by default");
  g->add_option("--features", o.arrays.features, "Features .npy [N, F] (f4 f8 i4 i8 u1 b1), row v = vertex v");
  g->add_option("--labels", o.arrays.labels, "Labels .npy [N] (integers; -1 = unlabeled)");
  g->add_option("--split", o.arrays.split, "Split .npy [N] of codes 0 none, 1 train, 2 val, 3 test");
  g->add_option("--train-mask", o.arrays.train_mask, "Train mask .npy [N] (bool); alternative to --split");
  g->add_option("--val-mask", o.arrays.val_mask, "Validation mask .npy [N] (bool)");
  g->add_option("--test-mask", o.arrays.test_mask, "Test mask .npy [N] (bool)");
  g->add_option("--split-index", o.split_index,
                "npz: which split of masks holding several (heterophilous: 10 splits, 0..9; PyG masks (N, S))")
      ->check(ht::cli::in_range(0, 9));
  g->add_option("--split-name", o.split_name,
                "ogb: the split/<name> folder to read (default: the first in sorted order, the only one in most "
                "datasets)");
  g->add_option("--target-id-column", o.target_id_column, "MUSAE target csv: vertex id column (Twitch: new_id)");
  g->add_option("--target-label-column", o.target_label_column,
                "MUSAE target csv: label column; classes = sorted distinct values (Twitch: mature)");
}

void add_generator_options(CLI::App& app, Context& c) {
  auto* g = app.add_option_group("Synthetic graphs (--generate)");
  auto& o = c.generate;
  g->add_option("--generate", c.generator,
                "Generator: random (uniform G(n, m)), rmat (R-MAT, skewed degrees, N = 2^scale), community "
                "(degree-corrected SBM with class-correlated features), web (crawl-like digraph: pages in hosts, "
                "power-law in- and out-degrees, hubs; class per host)")
      ->check(ht::cli::one_of(names_of(kGenerators)));
  g->add_option("--vertices", o.vertices, "random/community/web: vertex count (community default 10000, web 100000)")
      ->check(ht::cli::in_range(1, 9.2e18));
  g->add_option("--edges", o.edges,
                "random: edge count; rmat: edge count (default 16 * 2^scale); web: links (default 28 * vertices)")
      ->check(ht::cli::in_range(0, 9.2e18));
  g->add_option("--scale", o.scale, "rmat: N = 2^scale (default 16)")
      ->check(ht::cli::in_range(1, 30));
  g->add_option("--rmat-a", o.rmat_a, "rmat: quadrant probability a (default 0.57)")
      ->check(ht::cli::in_range(0, 1));
  g->add_option("--rmat-b", o.rmat_b, "rmat: quadrant probability b (default 0.19)")
      ->check(ht::cli::in_range(0, 1));
  g->add_option("--rmat-c", o.rmat_c, "rmat: quadrant probability c (default 0.19)")
      ->check(ht::cli::in_range(0, 1));
  g->add_option("--rmat-d", o.rmat_d, "rmat: quadrant probability d (default 0.05)")
      ->check(ht::cli::in_range(0, 1));
  g->add_option("--avg-degree", o.avg_degree, "community: average degree (default 10)")
      ->check(ht::cli::in_range(0, 1e9));
  g->add_option("--homophily", o.homophily,
                "community: fraction of edges inside a class (default 0.8); web: fraction of links inside their "
                "host (default 0.8)")
      ->check(ht::cli::in_range(0, 1));
  g->add_option("--degree-exponent", o.degree_exponent,
                "community: power-law exponent of degrees (default 2.5); web: of in-degrees (default 2.1)")
      ->check(ht::cli::greater_than(1));
  g->add_option("--signal", o.signal, "community/web: scale of the per-class feature mean (default 1)")
      ->check(ht::cli::in_range(-1e6, 1e6));
  g->add_option("--noise", o.noise, "community/web: feature noise std-dev (default 1)")
      ->check(ht::cli::in_range(0, 1e6));
  g->add_option("--host-size", o.host_size, "web: mean pages per host (power-law sizes, default 1000)")
      ->check(ht::cli::in_range(1, 9.2e18));
  g->add_flag("--host-order", o.host_order,
              "web: number pages in host order (each host a contiguous id range) instead of shuffling the ids");
}

void add_shared_options(CLI::App& app, Context& c) {
  auto* g = app.add_option_group("Vertex data and splits");
  g->add_option("--classes", c.classes,
                "Class count: generators' label count (random/rmat default 0 = no labels, community 8, web 16); with "
                "--labels the labels must be < it (default max label + 1)")
      ->check(ht::cli::in_range(0, 1 << 30));
  g->add_option("--feature-dim", c.feature_dim,
                "Feature width: generators (random/rmat default 0, community and web 64); facebook: at least max "
                "feature id + 1")
      ->check(ht::cli::in_range(0, 1 << 30));
  g->add_option("--train-fraction", c.convert.train_fraction,
                "Training fraction of the random split: facebook and npz without a split default 0.1 (stratified); generators: "
                "random/rmat/web 0.25, community 0.1")
      ->check(ht::cli::in_range(0, 1));
  g->add_option("--val-fraction", c.convert.val_fraction,
                "Validation fraction: facebook and npz default 0.1; random/rmat/web 0.25, community 0.2 (the rest is test)")
      ->check(ht::cli::in_range(0, 1));
  g->add_option("--seed", c.convert.seed, "Random seed (facebook and npz split, generators)")
      ->check(ht::cli::unsigned_integer());

  auto* t = app.add_option_group("Transformations");
  auto& o = c.convert;
  t->add_flag("--symmetrize,!--no-symmetrize", o.symmetrize,
              "Add v->u for every u->v (also drops duplicates); default on for planetoid, facebook and undirected "
              "npz, off otherwise");
  t->add_flag("--drop-duplicates,!--keep-duplicates", o.drop_duplicates,
              "Keep one edge per (u, v) pair (the first weight); default on for planetoid");
  auto* loops = ht::cli::add_enum(*t, "--self-loops", o.self_loops, kSelfLoops,
                                  "keep, drop or add (one per vertex that has none); auto = drop for planetoid and "
                                  "facebook, keep otherwise");
  loops->default_str("auto");
  loops->get_validator()->description("{auto,keep,drop,add}");
  t->add_flag("--normalize-features", o.normalize_features, "Scale feature rows to sum 1 (Kipf & Welling)");
  t->add_option("--id-bytes", o.id_bytes, "Vertex id width in the file: 4 or 8 (8 is forced for N >= 2^31)")
      ->check(ht::cli::one_of({"4", "8"}));
  ht::cli::add_enum(*t, "--feature-dtype", o.feature_dtype, ht::store_dtype_names(),
                    "Element type of the features in the file: bf16 or fp16 halve their bytes (rounded once to "
                    "nearest even; ht-train --host-dtype of the same type then takes them as they are). fp16 refuses "
                    "features beyond ±65504");
  t->add_flag("!--no-sync", o.sync,
              "Rename the file into place once it is in the page cache, without waiting for the disk (no fsync; "
              "the kernel writes it back while the next steps run). An interrupted run still leaves no file; a "
              "machine that stops before the write-back can leave an incomplete one");
}

void add_inspect_options(CLI::App& app, Context& c) {
  auto* g = app.add_option_group("Inspection (--inspect)");
  g->add_option("--inspect", c.inspect.path, "Validate a .htg file and print its statistics");
  g->add_flag("--json", c.inspect.json, "With --inspect: print one JSON object (keys in docs/CONVERT.md)");
  g->add_flag("--no-verify{false}", c.inspect.verify_checksums,
              "With --inspect: skip the section checksums (structure is still checked)");
}

// Copies the shared options into the options of the selected mode.
void wire_generate(Context& c) {
  auto& g = c.generate;
  static_cast<ht::data::SharedConvertOptions&>(g) = c.convert;
  g.kind = kGenerators.at(c.generator);
  g.classes = c.classes;
  g.feature_dim = c.feature_dim;
}

void wire_convert(Context& c) {
  auto& o = c.convert;
  o.format = kFormats.at(c.format);
  o.header = c.header > 0 ? HeaderMode::yes : c.header < 0 ? HeaderMode::no : HeaderMode::detect;
  o.arrays.num_classes = c.classes.value_or(0);
  o.feature_dim = c.feature_dim.value_or(0);
}

// Where each mode-specific option applies ("generate", "inspect", or a
// --format name); giving one elsewhere is an error rather than ignored.
const std::vector<std::pair<const char*, std::set<std::string>>> kScopes{
    {"--output", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--input", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges"}},
    {"--name", {"planetoid", "facebook"}},
    {"--header", {"edgelist"}},
    {"--num-vertices", {"edgelist"}},
    {"--keep-ids", {"edgelist"}},
    {"--ignore-weights", {"edgelist", "mtx"}},
    {"--allow-nonfinite", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges"}},
    {"--features", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges"}},
    {"--labels", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges"}},
    {"--split", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges"}},
    {"--train-mask", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges"}},
    {"--val-mask", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges"}},
    {"--test-mask", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges"}},
    {"--split-index", {"npz"}},
    {"--split-name", {"ogb"}},
    {"--target-id-column", {"facebook"}},
    {"--target-label-column", {"facebook"}},
    {"--vertices", {"generate"}},
    {"--edges", {"generate"}},
    {"--scale", {"generate"}},
    {"--rmat-a", {"generate"}},
    {"--rmat-b", {"generate"}},
    {"--rmat-c", {"generate"}},
    {"--rmat-d", {"generate"}},
    {"--avg-degree", {"generate"}},
    {"--homophily", {"generate"}},
    {"--degree-exponent", {"generate"}},
    {"--signal", {"generate"}},
    {"--noise", {"generate"}},
    {"--host-size", {"generate"}},
    {"--host-order", {"generate"}},
    {"--classes", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--feature-dim", {"facebook", "generate"}},
    {"--train-fraction", {"facebook", "npz", "generate"}},
    {"--val-fraction", {"facebook", "npz", "generate"}},
    {"--seed", {"facebook", "npz", "generate"}},
    {"--symmetrize", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--drop-duplicates", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--self-loops", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--normalize-features", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--id-bytes", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--feature-dtype", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--no-sync", {"edgelist", "mtx", "planetoid", "facebook", "npz", "ogb", "npy-edges", "generate"}},
    {"--json", {"inspect"}},
    {"--no-verify", {"inspect"}},
};

void check_scopes(const CLI::App& app, const std::string& mode, const std::string& shown) {
  for (const auto& [option, modes] : kScopes)
    if (app.get_option(option)->count() > 0 && !modes.count(mode))
      throw ht::usage_error(option, fmt::format("does not apply to {}", shown));
}

void run(const CLI::App& app, Context& c) {
  const int modes = !c.format.empty() + !c.generator.empty() + !c.inspect.path.empty();
  if (modes != 1)
    throw ht::usage_error("--format/--generate/--inspect", "give exactly one of them (see --help)");
  if (!c.format.empty()) check_scopes(app, c.format, "--format " + c.format);
  if (!c.generator.empty()) check_scopes(app, "generate", "--generate");
  if (!c.inspect.path.empty()) check_scopes(app, "inspect", "--inspect");
  if (!c.inspect.path.empty()) {
    std::fputs(ht::data::inspect_graph_file(c.inspect).c_str(), stdout);
    return;
  }
  if (!c.generator.empty()) {
    wire_generate(c);
    ht::data::run_generate(c.generate);
    return;
  }
  wire_convert(c);
  ht::data::run_convert(c.convert);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "ht-convert: build a hongtu graph file (.htg) from an edge list, a Matrix Market file, NumPy arrays, the raw "
      "Planetoid / Facebook (MUSAE) / heterophilous .npz datasets, or a synthetic generator; or --inspect one.\n"
      "Examples:\n"
      "  ht-convert --format edgelist -i web.txt --features x.npy --labels y.npy --split s.npy -o web.htg\n"
      "  ht-convert --format planetoid -i shared/datasets/cora/raw -o cora.htg\n"
      "  ht-convert --format ogb -i dataset/ogbn_arxiv --symmetrize -o arxiv.htg\n"
      "  ht-convert --generate rmat --scale 20 --feature-dim 128 --classes 16 -o rmat20.htg\n"
      "  ht-convert --generate web --vertices 1000000 --feature-dim 128 --classes 32 -o web1m.htg\n"
      "  ht-convert --inspect cora.htg --json",
      "ht-convert");
  Context c;
  ht::cli::setup_app(app, c.common);
  app.add_option("-o,--output", c.convert.output, "Output graph file (.htg), written atomically");
  add_input_options(app, c);
  add_generator_options(app, c);
  add_shared_options(app, c);
  add_inspect_options(app, c);
  return ht::cli::run(app, c.common, argc, argv, [&] { run(app, c); });
}
