// ht-bench-read: times the input-reading half of ht-train's setup — the graph
// file, the partition file, renumber() and the plan file — step by step, so
// that a change to the readers can be measured (issue 14). --cold evicts the
// inputs from the page cache before every repetition (posix_fadvise
// DONTNEED: works on files this user can read, no root needed).
#include <fcntl.h>
#include <unistd.h>

#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "core/container.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/timer.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition.hpp"
#include "partition/partition_file.hpp"
#include "plan/plan_file.hpp"

namespace {

struct Options {
  std::string graph, partition, plan;
  int repeat = 3;
  bool cold = false;
  bool no_verify = false;
};

void evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ht::file_error(path, "cannot open to evict from the page cache");
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// One step: the best of the repetitions is reported (least disturbed by
// other load on the machine), with the bytes it read.
struct Step {
  std::string name;
  double bytes = 0;
  double best = 1e30;
};

void record(Step& s, const ht::Timer& t) { s.best = std::min(s.best, t.seconds()); }

void run(const Options& o) {
  const ht::ReadOptions ro{!o.no_verify};
  const double gbytes = static_cast<double>(ht::file_size(o.graph));
  const double pbytes = o.partition.empty() ? 0 : static_cast<double>(ht::file_size(o.partition));
  const double lbytes = o.plan.empty() ? 0 : static_cast<double>(ht::file_size(o.plan));
  std::vector<Step> steps = {{"graph: container (header + checksums)", gbytes},
                             {"graph: GraphFile (container + validation)", gbytes},
                             {"partition: read_partition", pbytes},
                             {"renumber", gbytes},
                             {"plan: read_plan", lbytes}};
  for (int r = 0; r < o.repeat; ++r) {
    for (const auto* p : {&o.graph, &o.partition, &o.plan})
      if (o.cold && !p->empty()) evict(*p);
    {
      ht::Timer t;
      ht::ContainerReader c(o.graph, ht::kGraphMagic, ht::kGraphVersion, ro);
      record(steps[0], t);
    }
    if (o.cold) evict(o.graph);
    ht::Timer t;
    ht::GraphFile gf(o.graph, ro);
    record(steps[1], t);
    if (o.partition.empty()) continue;
    t.reset();
    const ht::Partition part = ht::read_partition(o.partition, ro);
    record(steps[2], t);
    t.reset();
    const ht::Graph gn = ht::renumber(gf.view(), part);
    record(steps[3], t);
    if (o.plan.empty()) continue;
    t.reset();
    const ht::Plan plan = ht::read_plan(o.plan, ro);
    record(steps[4], t);
  }
  fmt::print("{} threads, {} repetitions ({}), checksums {}; best of the repetitions:\n", omp_get_max_threads(),
             o.repeat, o.cold ? "cold page cache" : "warm page cache", o.no_verify ? "skipped" : "verified");
  double total = 0;
  for (const Step& s : steps) {
    if (s.best > 1e29 || s.name.starts_with("graph: container")) {
      if (s.best < 1e29) fmt::print("  {:<44} {:7.3f} s  {:6.2f} GB/s\n", s.name, s.best, s.bytes / s.best / 1e9);
      continue;
    }
    total += s.best;
    fmt::print("  {:<44} {:7.3f} s  {:6.2f} GB/s\n", s.name, s.best, s.bytes / s.best / 1e9);
  }
  fmt::print("  {:<44} {:7.3f} s\n", "total (without the container line)", total);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time the readers of ht-train's inputs: graph file, partition file, renumber(), plan file.",
               "ht-bench-read"};
  ht::cli::CommonOptions common;
  ht::cli::setup_app(app, common);
  Options o;
  app.add_option("-g,--graph", o.graph, "Graph file (.htg)")->required();
  app.add_option("-p,--partition", o.partition, "Partition file (.htp); also times renumber()");
  app.add_option("--plan", o.plan, "Plan file (.htplan)");
  app.add_option("--repeat", o.repeat, "Repetitions (the best is reported)")->check(CLI::PositiveNumber);
  app.add_flag("--cold", o.cold, "Evict the inputs from the page cache before each repetition");
  app.add_flag("--no-verify", o.no_verify, "Skip the section checksums (ht-train --no-verify)");
  return ht::cli::run(app, common, argc, argv, [&] { run(o); });
}
