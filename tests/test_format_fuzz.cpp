// Plans validated at load and every binary format under mutation (issue 17):
// a forged but resealed plan (maxima, neighbor lists, topology) is refused by
// read_plan with a one-line error, and a plan whose derived lists (remote
// slots, flushes, merged rows, reuse marks: not in the file since format 2)
// are forged is refused by write_plan; and for the
// graph, partition, plan, model and training checkpoint files, truncations,
// byte flips and flips resealed with fresh checksums (so that only the
// structural and semantic checks can catch them) each give a clean ht::Error
// or a result equal to the unmodified file's: never a crash, a hang or a
// silent difference.
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/container.hpp"
#include "core/hash.hpp"
#include "core/rng.hpp"
#include "graph/graph_file.hpp"
#include "models/model.hpp"
#include "partition/partition_file.hpp"
#include "partition/plan_builder.hpp"
#include "plan/plan_file.hpp"
#include "plan/plan_validate.hpp"
#include "plan_test_graphs.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/train_checkpoint.hpp"

namespace ht {
namespace {

struct Sample {
  Graph g, g_new;
  Partition p;
  Plan plan;
};

Sample sample() {
  Sample s;
  s.g = test::make_graph(test::GraphKind::community, 200, 1200, 7);
  std::tie(s.g_new, s.p) = test::shuffled_partition(s.g, 2, 3, 5);
  s.plan = build_plan(s.g_new.view(), s.p, {});
  return s;
}

// Writes the forged plan (write_plan computes fresh checksums: resealed) and
// returns read_plan's error.
std::string forged_error(const test::TempDir& dir, const Plan& plan) {
  const std::string path = dir.file("forged.htplan");
  write_plan(path, plan, {});
  return test::error_of([&] { read_plan(path); });
}

TEST(PlanValidate, ConsistentPlanPasses) {
  const Sample s = sample();
  EXPECT_EQ(find_plan_inconsistency(s.plan), "");
}

TEST(PlanValidate, ForgedAndResealedPlansAreRefusedAtLoad) {
  test::TempDir dir;
  const Sample s = sample();
  auto expect_refused = [&](const char* what, const std::function<void(Plan&)>& forge, const char* pattern) {
    SCOPED_TRACE(what);
    Plan p = s.plan;
    forge(p);
    const std::string e = forged_error(dir, p);
    EXPECT_NE(e.find(pattern), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  };
  expect_refused("max_dst", [](Plan& p) { p.max_dst[0] += 1 << 20; }, "recorded max_dst");
  expect_refused("max_edges", [](Plan& p) { p.max_edges[1] *= 100; }, "recorded max_edges");
  expect_refused("trans capacity", [](Plan& p) { p.trans_capacity[0] += 1000; }, "transition capacity");
  expect_refused("remote capacity", [](Plan& p) { p.remote_capacity[1] += 1000; }, "remote capacity");
  expect_refused("nbr capacity", [](Plan& p) { p.nbr_capacity[0] += 1; }, "neighbor capacity");
  expect_refused(
      "neighbor order",
      [](Plan& p) {
        for (ChunkPlan& cp : p.steps)
          if (cp.nbr.size() >= 2) {
            std::swap(cp.nbr[0], cp.nbr[1]);
            return;
          }
      },
      "ascending");
  expect_refused(
      "neighbor index",
      [](Plan& p) {
        ChunkPlan& cp = p.steps.back();
        cp.src_local.back() = static_cast<uint32_t>(cp.nbr.size());
      },
      "outside the step's neighbor list");
}

// Lists that a plan file derives cannot be forged in the file; a plan whose
// own lists are forged is refused before anything is written.
TEST(PlanValidate, ForgedDerivedListsAreRefusedAtWrite) {
  test::TempDir dir;
  const Sample s = sample();
  auto expect_refused = [&](const char* what, const std::function<void(Plan&)>& forge) {
    SCOPED_TRACE(what);
    Plan p = s.plan;
    forge(p);
    EXPECT_NE(find_plan_inconsistency(p), "");
    const std::string e = test::error_of([&] { write_plan(dir.file("forged.htplan"), p, {}); });
    EXPECT_NE(e.find("internal error: cannot write the plan"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  };
  expect_refused("remote slot", [](Plan& p) {
    for (ChunkPlan& cp : p.steps)
      if (!cp.remote_slot.empty()) {
        const uint32_t cap = p.trans_capacity[cp.remote_gpu[0]];
        cp.remote_slot[0] = (cp.remote_slot[0] + 1) % cap;
        return;
      }
  });
  expect_refused("flush vid", [](Plan& p) {
    for (ChunkPlan& cp : p.steps)
      if (cp.flush_vid.size() >= 2) {
        std::swap(cp.flush_vid[0], cp.flush_vid[1]);
        return;
      }
  });
  expect_refused("merged row", [](Plan& p) {
    for (ChunkPlan& cp : p.steps)
      for (size_t e = 1; e < cp.src_merged.size(); ++e)
        if (cp.src_vid[e] != cp.src_vid[0]) {
          cp.src_merged[0] = cp.src_merged[e];
          return;
        }
  });
  expect_refused("reuse mark", [](Plan& p) {
    for (ChunkPlan& cp : p.steps)
      for (size_t b = 0; b < cp.trans_reused.size(); ++b)
        if (!cp.trans_reused[b]) {
          cp.trans_reused[b] = 1;
          return;
        }
  });
}

// --- mutation of every binary format -------------------------------------------

// Recomputes every section checksum and the header checksum of a container
// (docs/FORMATS.md) so that the mutation reaches the structural checks.
void reseal(std::vector<char>& f) {
  if (f.size() < container::kHeaderBytes) return;
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, f.data() + at, 4);
    return v;
  };
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, f.data() + at, 8);
    return v;
  };
  const uint32_t sections = std::min<uint32_t>(u32(20), container::kMaxSections);
  for (uint32_t i = 0; i < sections; ++i) {
    const size_t entry = 192 + 96 * static_cast<size_t>(i);
    const uint64_t off = u64(entry + 56), len = u64(entry + 64);
    if (off > f.size() || len > f.size() - off || len > (64ull << 20)) continue;
    const uint64_t sum = xxh64(f.data() + off, len, 0);
    std::memcpy(f.data() + entry + 72, &sum, 8);
  }
  std::memset(f.data() + 32, 0, 8);
  const uint64_t h = xxh64(f.data(), container::kHeaderBytes, 0);
  std::memcpy(f.data() + 32, &h, 8);
}

// Mutates `path` many ways; `read` must throw ht::Error or return what it
// returns for the original file.
void fuzz(const std::string& path, const std::function<std::string(const std::string&)>& read, uint64_t seed) {
  const std::vector<char> original = test::read_bytes(path);
  const std::string expected = read(path);
  const std::string mutant = path + ".mutant";
  rng::Stream rs(seed, 17);
  int errors = 0, equal = 0;
  for (int round = 0; round < 120; ++round) {
    std::vector<char> f = original;
    const int kind = round % 3;
    if (kind == 0) {
      f.resize(rs.below(f.size()));
    } else {
      // Flips anywhere (the checksums catch them), or resealed flips in the
      // header: meta values, the section table (names, dtypes, shapes,
      // offsets). A resealed flip inside a float payload is a different valid
      // file, which no reader can tell from the original, so it is not tried.
      const int flips = 1 + static_cast<int>(rs.below(3));
      for (int k = 0; k < flips; ++k) {
        const size_t header = std::min<size_t>(f.size(), container::kHeaderBytes);
        const size_t at = kind == 2 || rs.below(2) ? rs.below(header) : rs.below(f.size());
        f[at] = static_cast<char>(f[at] ^ static_cast<char>(1 + rs.below(255)));
      }
      if (kind == 2) reseal(f);
    }
    test::write_bytes(mutant, f);
    try {
      const std::string got = read(mutant);
      EXPECT_EQ(got, expected) << "round " << round << ": a mutated file read as something else";
      ++equal;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}

// A digest of what a reader returns (equal digests = equal results).
template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST(FormatFuzz, EveryBinaryFormatGivesACleanErrorOrTheSameResult) {
  test::TempDir dir;
  const Sample s = sample();
  write_graph(dir.file("g.htg"), s.g.view());
  fuzz(dir.file("g.htg"), [](const std::string& p) {
    const GraphFile gf(p);
    const GraphView& g = gf.view();
    return bytes_of(std::vector<int64_t>(g.offsets.begin(), g.offsets.end())) +
           bytes_of(std::vector<vid_t>(g.sources.begin(), g.sources.end())) +
           bytes_of(std::vector<float>(g.features.begin(), g.features.end())) +
           bytes_of(std::vector<int32_t>(g.labels.begin(), g.labels.end()));
  }, 1);
  write_partition(dir.file("p.htp"), s.p);
  fuzz(dir.file("p.htp"), [](const std::string& p) {
    const Partition q = read_partition(p);
    return bytes_of(q.new_to_old) + bytes_of(q.chunk_offsets) + bytes_of(q.part_offsets);
  }, 2);
  write_plan(dir.file("x.htplan"), s.plan, {});
  fuzz(dir.file("x.htplan"), [](const std::string& p) {
    const Plan q = read_plan(p);
    std::string d;
    for (const ChunkPlan& cp : q.steps)
      d += bytes_of(cp.src_merged) + bytes_of(cp.remote_slot) + bytes_of(cp.flush_vid) + bytes_of(cp.trans_slot);
    return d + bytes_of(q.max_dst) + bytes_of(q.max_edges);
  }, 3);
  ModelConfig cfg;
  cfg.dims = {12, 8, 3};
  ModelParams params = init_params(cfg);
  save_model(dir.file("m.htmodel"), cfg, params);
  fuzz(dir.file("m.htmodel"), [&](const std::string& p) {
    ModelParams q = init_params(cfg);
    load_model(p, cfg, q);
    std::string d;
    for (const ParamTensor& t : q.tensors) d += bytes_of(t.value);
    return d;
  }, 4);
  TrainCheckpoint c;
  c.target.model = model_shape(cfg);
  c.target.optimizer = "adam";
  c.epochs_done = 3;
  c.optimizer_steps = 3;
  // A checkpoint a run could write: one metrics line per epoch done, Adam's
  // second moments not negative (the reader checks both).
  c.metrics = "{\"type\":\"epoch\",\"epoch\":0}\n{\"type\":\"epoch\",\"epoch\":1}\n{\"type\":\"epoch\",\"epoch\":2}\n";
  for (const ParamTensor& t : params.tensors) {
    c.tensors.push_back(t);
    c.m.push_back(t.value);
    std::vector<float> v = t.value;
    for (float& x : v) x *= x;
    c.v.push_back(std::move(v));
  }
  write_train_checkpoint(dir.file("c.htckpt"), c);
  fuzz(dir.file("c.htckpt"), [](const std::string& p) {
    const TrainCheckpoint r = read_train_checkpoint(p);
    std::string d = r.metrics + r.target.model + std::to_string(r.epochs_done);
    for (size_t k = 0; k < r.tensors.size(); ++k) d += r.tensors[k].name + bytes_of(r.tensors[k].value) + bytes_of(r.m[k]);
    return d;
  }, 5);
}

}  // namespace
}  // namespace ht

namespace ht {
namespace {

TEST(ErrorText, ControlBytesOfInputsAreShownEscapedOnOneLine) {
  const Error e = line_error("a.txt", 3, std::string("token 'x\0y\r\nz' is bad", 21));
  const std::string what = e.what();  // as main() prints it: a C string
  EXPECT_EQ(what, "a.txt:3: token 'x\\0y\\r\\nz' is bad");
}

}  // namespace
}  // namespace ht
