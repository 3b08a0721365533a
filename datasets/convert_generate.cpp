#include "datasets/convert_generate.hpp"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/half.hpp"
#include "core/memory.hpp"
#include "core/memory_limit.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "datasets/generators.hpp"
#include "datasets/stratified_split.hpp"

namespace ht::data {

const NameTable<GeneratorKind>& generator_names() {
  static const NameTable<GeneratorKind> names{
      {"random", GeneratorKind::random},
      {"rmat", GeneratorKind::rmat},
      {"community", GeneratorKind::community},
      {"web", GeneratorKind::web}};
  return names;
}

namespace {

// Rejects options that the chosen generator does not have, so that a typo in
// a batch script is not silently ignored.
void reject(bool given, const char* option, GeneratorKind kind) {
  if (given) throw usage_error(option, fmt::format("does not apply to --generate {}", name_in(generator_names(), kind)));
}

// More classes than vertices leave classes without a vertex (community and
// web refuse them too).
void check_classes(int64_t classes, int64_t vertices) {
  if (classes > vertices)
    throw option_error("--classes", fmt::format("{} classes for {} vertices: every class needs a vertex", classes,
                                                vertices));
}

gen::VertexDataParams vertex_data(const GenerateOptions& o, gen::VertexDataParams d) {
  d.feature_dim = o.feature_dim.value_or(d.feature_dim);
  d.num_classes = o.classes.value_or(d.num_classes);
  d.train_fraction = o.train_fraction.value_or(d.train_fraction);
  d.val_fraction = o.val_fraction.value_or(d.val_fraction);
  return d;
}

// --host-size and --host-order belong to the web generator only.
void reject_web_options(const GenerateOptions& o) {
  reject(o.host_size.has_value(), "--host-size", o.kind);
  reject(o.host_order, "--host-order", o.kind);
}

// Refuses, before anything is generated, a graph that cannot fit (--edges
// 1e15 ran for minutes first): lower bounds, 16 bytes per generated edge in
// memory against what the machine leaves, and 4 bytes per edge (its id in
// the file) plus the features against the output folder's free space.
void check_fits(const GenerateOptions& o, int64_t n, int64_t edges, int64_t f) {
  const double memory = 16.0 * static_cast<double>(edges) + 8.0 * static_cast<double>(n);
  const HostMemoryLimit limit = detect_host_memory_limit(0);
  const char* option = o.edges ? "--edges" : (o.scale ? "--scale" : "--vertices");
  if (limit.bytes > 0 && memory > static_cast<double>(limit.bytes))
    throw option_error(option, fmt::format("a graph of {} vertices and {} edges needs at least {} of memory to "
                                           "generate, but {} is available ({}); generate a smaller one",
                                           n, edges, format_bytes(memory),
                                           format_bytes(static_cast<double>(limit.bytes)), limit.source));
  const double disk = static_cast<double>(o.id_bytes) * static_cast<double>(edges) +
                      static_cast<double>(dtype_bytes(o.feature_dtype)) * static_cast<double>(n) *
                          static_cast<double>(f);
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(o.output).parent_path();
  if (dir.empty()) dir = ".";
  const std::filesystem::space_info space = std::filesystem::space(dir, ec);
  if (!ec && disk > static_cast<double>(space.available))
    throw option_error(f > 0 && disk > 2.0 * static_cast<double>(o.id_bytes) * static_cast<double>(edges)
                           ? "--feature-dim"
                           : option,
                       fmt::format("the graph file of {} vertices, {} edges and {} feature columns needs at least {} "
                                   "but {} has {} free; generate a smaller one or write elsewhere",
                                   n, edges, f, format_bytes(disk), dir.string(),
                                   format_bytes(static_cast<double>(space.available))));
}

gen::GeneratedGraph generate_random(const GenerateOptions& o) {
  reject_web_options(o);
  reject(o.scale.has_value(), "--scale", o.kind);
  reject(o.rmat_a || o.rmat_b || o.rmat_c || o.rmat_d, "--rmat-a/b/c/d", o.kind);
  reject(o.avg_degree || o.homophily || o.degree_exponent || o.signal || o.noise,
         "--avg-degree/--homophily/--degree-exponent/--signal/--noise", o.kind);
  gen::RandomParams p;
  if (!o.vertices || *o.vertices <= 0) throw usage_error("--vertices", "required (> 0) for --generate random");
  if (!o.edges || *o.edges < 0) throw usage_error("--edges", "required (>= 0) for --generate random");
  p.num_vertices = *o.vertices;
  p.num_edges = *o.edges;
  p.seed = o.seed;
  p.data = vertex_data(o, p.data);
  check_classes(p.data.num_classes, p.num_vertices);
  check_split_fractions(p.data.train_fraction, p.data.val_fraction);
  check_fits(o, p.num_vertices, p.num_edges, p.data.feature_dim);
  return gen::generate(p);
}

gen::GeneratedGraph generate_rmat(const GenerateOptions& o) {
  reject_web_options(o);
  reject(o.vertices.has_value(), "--vertices (R-MAT has N = 2^scale; use --scale)", o.kind);
  reject(o.avg_degree || o.homophily || o.degree_exponent || o.signal || o.noise,
         "--avg-degree/--homophily/--degree-exponent/--signal/--noise", o.kind);
  gen::RmatParams p;
  p.scale = o.scale.value_or(p.scale);
  if (p.scale < 1 || p.scale > 30) throw option_error("--scale", "must be in 1..30");
  // Given, --edges is the edge count (0 is not the default in disguise:
  // leave the option out for 16 * 2^scale).
  if (o.edges && *o.edges < 1)
    throw option_error("--edges", fmt::format("{} edges: must be >= 1 for --generate rmat (leave it out for the "
                                              "default 16 * 2^scale)",
                                              *o.edges));
  p.num_edges = o.edges.value_or(p.num_edges);
  p.a = o.rmat_a.value_or(p.a);
  p.b = o.rmat_b.value_or(p.b);
  p.c = o.rmat_c.value_or(p.c);
  p.d = o.rmat_d.value_or(p.d);
  if (p.a < 0 || p.b < 0 || p.c < 0 || p.d < 0 || std::abs(p.a + p.b + p.c + p.d - 1.0) > 1e-6)
    throw option_error("--rmat-a/b/c/d", fmt::format("probabilities {} {} {} {} must be >= 0 and sum to 1", p.a, p.b,
                                                     p.c, p.d));
  p.seed = o.seed;
  p.data = vertex_data(o, p.data);
  check_classes(p.data.num_classes, int64_t{1} << p.scale);
  check_split_fractions(p.data.train_fraction, p.data.val_fraction);
  check_fits(o, int64_t{1} << p.scale, p.num_edges > 0 ? p.num_edges : (int64_t{16} << p.scale), p.data.feature_dim);
  return gen::generate(p);
}

// The options the community and web generators share (classes with
// homophily, power-law degrees, class-correlated features, the split), over
// the generator's defaults.
template <typename Params>
void set_class_model(const GenerateOptions& o, Params& p) {
  p.num_vertices = o.vertices.value_or(p.num_vertices);
  p.num_classes = o.classes.value_or(p.num_classes);
  p.homophily = o.homophily.value_or(p.homophily);
  p.degree_exponent = o.degree_exponent.value_or(p.degree_exponent);
  p.feature_dim = o.feature_dim.value_or(p.feature_dim);
  p.signal = o.signal.value_or(p.signal);
  p.noise = o.noise.value_or(p.noise);
  p.train_fraction = o.train_fraction.value_or(p.train_fraction);
  p.val_fraction = o.val_fraction.value_or(p.val_fraction);
  p.seed = o.seed;
}

gen::GeneratedGraph generate_community(const GenerateOptions& o) {
  reject_web_options(o);
  reject(o.scale.has_value(), "--scale", o.kind);
  reject(o.rmat_a || o.rmat_b || o.rmat_c || o.rmat_d, "--rmat-a/b/c/d", o.kind);
  reject(o.edges.has_value(), "--edges (use --avg-degree)", o.kind);
  gen::CommunityParams p;
  set_class_model(o, p);
  p.avg_degree = o.avg_degree.value_or(p.avg_degree);
  if (p.num_vertices <= 0) throw option_error("--vertices", "must be > 0");
  if (p.num_classes <= 0) throw option_error("--classes", "must be > 0 for --generate community");
  if (p.avg_degree < 0) throw option_error("--avg-degree", "must be >= 0");
  if (p.homophily < 0 || p.homophily > 1) throw option_error("--homophily", "must be in [0, 1]");
  if (p.degree_exponent <= 1) throw option_error("--degree-exponent", "must be > 1");
  if (p.noise < 0) throw option_error("--noise", "must be >= 0");
  check_split_fractions(p.train_fraction, p.val_fraction);
  check_fits(o, p.num_vertices, static_cast<int64_t>(static_cast<double>(p.num_vertices) * p.avg_degree), p.feature_dim);
  return gen::generate(p);
}

gen::GeneratedGraph generate_web(const GenerateOptions& o) {
  reject(o.scale.has_value(), "--scale", o.kind);
  reject(o.rmat_a || o.rmat_b || o.rmat_c || o.rmat_d, "--rmat-a/b/c/d", o.kind);
  reject(o.avg_degree.has_value(), "--avg-degree (use --edges)", o.kind);
  gen::WebParams p;
  set_class_model(o, p);
  p.num_edges = o.edges.value_or(p.num_edges);
  p.host_size = o.host_size.value_or(p.host_size);
  p.host_order = o.host_order;
  if (p.num_vertices <= 0) throw option_error("--vertices", "must be > 0");
  if (o.edges && *o.edges < 1)
    throw option_error("--edges", fmt::format("{} links: must be >= 1 for --generate web (leave it out for the "
                                              "default 28 per vertex)",
                                              *o.edges));
  if (p.num_classes <= 0) throw option_error("--classes", "must be > 0 for --generate web");
  if (p.homophily < 0 || p.homophily > 1) throw option_error("--homophily", "must be in [0, 1]");
  if (p.degree_exponent <= 1) throw option_error("--degree-exponent", "must be > 1");
  if (p.host_size < 1) throw option_error("--host-size", "must be >= 1");
  if (p.noise < 0) throw option_error("--noise", "must be >= 0");
  const double pairs = static_cast<double>(p.num_vertices) * static_cast<double>(p.num_vertices - 1);
  if (static_cast<double>(p.num_edges) > pairs)
    throw option_error("--edges", fmt::format("{} links do not fit in {} vertices without self-loops or duplicates",
                                              p.num_edges, p.num_vertices));
  check_split_fractions(p.train_fraction, p.val_fraction);
  check_fits(o, p.num_vertices, p.num_edges > 0 ? p.num_edges : 28 * p.num_vertices, p.feature_dim);
  return gen::generate(p);
}

gen::GeneratedGraph generate_graph(const GenerateOptions& o) {
  switch (o.kind) {
    case GeneratorKind::random: return generate_random(o);
    case GeneratorKind::rmat: return generate_rmat(o);
    case GeneratorKind::community: return generate_community(o);
    case GeneratorKind::web: return generate_web(o);
  }
  throw Error("unknown generator");
}

}  // namespace

void run_generate(const GenerateOptions& o) {
  const Timer total;
  check_output_path(o.output, "--output");
  if (o.id_bytes != 4 && o.id_bytes != 8) throw option_error("--id-bytes", "must be 4 or 8");
  if (o.feature_dim && *o.feature_dim < 0) throw option_error("--feature-dim", "must be >= 0");
  if (o.classes && *o.classes < 0) throw option_error("--classes", "must be >= 0");
  PhaseTimes phases;
  Timer timer;
  gen::GeneratedGraph g = generate_graph(o);
  phases.add("generate", timer.seconds());
  transform_and_write(std::move(g.graph), resolve_transforms(o, false, false, SelfLoops::keep), o.output,
                      {o.id_bytes, o.feature_dtype, o.sync}, phases, total, g.features);
}

}  // namespace ht::data
