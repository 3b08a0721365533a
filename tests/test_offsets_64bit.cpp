// 64-bit safety of edge offsets and row indices, on the CPU, without
// gigabytes of memory: graphs whose edges sit past 2^32 in their edge array.
//
// A small graph is viewed through offsets shifted by kBase (> 2^32, and odd
// enough that 32-bit truncation lands neither on 0 nor on the data) into a
// sources array of kBase + E ids whose first kBase ids are address space
// reserved with PROT_NONE: they cost no memory, and any access to them
// faults. Code that narrows an offset to int or uint32_t reads or writes the
// wrong place — the reserved range (a crash) or the real edges of another
// vertex (a wrong result) — so the real code paths below, run on the shifted
// view, must give exactly what they give on the plain graph. Likewise for
// feature rows past 2^32 values (N x F of it-2004-like graphs is 1e10).
//
// What runs here works per vertex range (offsets[v] .. offsets[v + 1]), as
// the chunking, statistics and plan building do. Loops over a whole edge
// array [0, E) (graph file checks, the METIS transpose) cannot be shifted:
// they index with int64_t loop variables, checked by reading the code.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "datasets/generate_detail.hpp"
#include "datasets/generators.hpp"
#include "graph/build.hpp"
#include "graph/feature_rows.hpp"
#include "partition/partition_run.hpp"
#include "partition/partition_stats.hpp"
#include "partition/plan_builder.hpp"

namespace ht {
namespace {

// Past both 2^31 and 2^32; as int32 it is negative, as uint32 it points
// into the reserved range.
constexpr uint64_t kBase = (uint64_t{3} << 31) + 4099;

// `size` elements of address space, PROT_NONE except the window [first,
// first + count), which is readable and writable (and costs memory).
template <typename T>
class SparseArray {
 public:
  SparseArray(uint64_t size, uint64_t first, uint64_t count) : bytes_(size * sizeof(T)) {
    void* p = ::mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    HT_CHECK(p != MAP_FAILED, "cannot reserve {} bytes of address space", bytes_);
    base_ = static_cast<T*>(p);
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto lo = reinterpret_cast<uintptr_t>(base_ + first) / page * page;
    const auto hi = (reinterpret_cast<uintptr_t>(base_ + first + count) + page - 1) / page * page;
    if (hi > lo)
      HT_CHECK(::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) == 0,
               "cannot map the window of a sparse array");
  }
  ~SparseArray() { ::munmap(base_, bytes_); }
  SparseArray(const SparseArray&) = delete;
  SparseArray& operator=(const SparseArray&) = delete;
  std::span<T> all() { return {base_, bytes_ / sizeof(T)}; }

 private:
  size_t bytes_;
  T* base_ = nullptr;
};

// g's edges at [kBase, kBase + E) of a sparse sources array, its offsets
// shifted by kBase; vertex data shared with g.
class ShiftedGraph {
 public:
  explicit ShiftedGraph(const Graph& g)
      : sources_(kBase + static_cast<uint64_t>(g.num_edges()), kBase, static_cast<uint64_t>(g.num_edges())) {
    offsets_.resize(g.offsets.size());
    for (size_t v = 0; v < g.offsets.size(); ++v) offsets_[v] = static_cast<int64_t>(kBase) + g.offsets[v];
    std::copy(g.sources.begin(), g.sources.end(), sources_.all().begin() + static_cast<int64_t>(kBase));
    view_ = g.view();
    view_.num_edges = static_cast<int64_t>(kBase) + g.num_edges();  // the spans' extent
    view_.offsets = offsets_;
    view_.sources = sources_.all();
  }
  const GraphView& view() const { return view_; }
  std::span<const int64_t> offsets() const { return offsets_; }
  std::span<vid_t> sources() { return sources_.all(); }

 private:
  SparseArray<vid_t> sources_;
  std::vector<int64_t> offsets_;
  GraphView view_;
};

// A skewed, sorted, directed graph with labels, self-loops and duplicates
// (R-MAT), and a symmetric simple one (community).
Graph rmat_graph() {
  gen::RmatParams p;
  p.scale = 12;
  p.num_edges = 40000;
  p.data.num_classes = 4;
  return gen::rmat_graph(p);
}

Graph community_graph() {
  gen::CommunityParams p;
  p.num_vertices = 3000;
  p.feature_dim = 0;
  return gen::community_graph(p);
}

bool same_flags(const GraphFlags& a, const GraphFlags& b) {
  return a.symmetric == b.symmetric && a.has_self_loops == b.has_self_loops &&
         a.sorted_neighbors == b.sorted_neighbors && a.no_duplicates == b.no_duplicates;
}

}  // namespace

TEST(Offsets64, ViewAccessorsPastTwoToThe32) {
  const Graph g = rmat_graph();
  const ShiftedGraph s(g);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    ASSERT_EQ(s.view().in_degree(v), g.view().in_degree(v)) << v;
    const auto a = s.view().in_neighbors(v), b = g.view().in_neighbors(v);
    ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << v;
  }
}

TEST(Offsets64, FlagsAndDegreesPastTwoToThe32) {
  for (const Graph& g : {rmat_graph(), community_graph()}) {
    const ShiftedGraph s(g);
    EXPECT_TRUE(same_flags(detect_flags(s.view()), detect_flags(g.view())));
    EXPECT_TRUE(out_degrees(s.view()) == out_degrees(g.view()));
  }
  EXPECT_TRUE(detect_flags(ShiftedGraph(community_graph()).view()).symmetric);  // the symmetric path ran
}

TEST(Offsets64, GeneratorSortAndScatterPastTwoToThe32) {
  // The generators' per-destination sort, on unsorted rows past 2^32.
  Graph g = rmat_graph();
  for (int64_t v = 0; v < g.num_vertices; ++v)
    std::reverse(g.sources.begin() + g.offsets[v], g.sources.begin() + g.offsets[v + 1]);
  ShiftedGraph s(g);
  const gen::detail::TopologyScan shifted = gen::detail::sort_and_scan(s.offsets(), s.sources());
  const gen::detail::TopologyScan plain = gen::detail::sort_and_scan(g);
  EXPECT_EQ(shifted.has_self_loops, plain.has_self_loops);
  EXPECT_EQ(shifted.has_duplicates, plain.has_duplicates);
  const auto sorted = s.sources().subspan(kBase);
  EXPECT_TRUE(std::equal(sorted.begin(), sorted.end(), g.sources.begin(), g.sources.end()));

  // The two-pass scatter: cursors past 2^32 store each source at its slot.
  SparseArray<vid_t> out(kBase + 1000, kBase, 1000);
  std::vector<int64_t> cursor = {static_cast<int64_t>(kBase), static_cast<int64_t>(kBase) + 500};
  gen::detail::EdgeBatch batch(cursor.data(), out.all().data());
  for (vid_t i = 0; i < 300; ++i) batch.add(i, i % 2);  // even sources to 0, odd to 1
  batch.flush();
  EXPECT_EQ(cursor[0], static_cast<int64_t>(kBase) + 150);
  EXPECT_EQ(cursor[1], static_cast<int64_t>(kBase) + 650);
  std::vector<vid_t> to0(out.all().begin() + kBase, out.all().begin() + kBase + 150);
  std::vector<vid_t> to1(out.all().begin() + kBase + 500, out.all().begin() + kBase + 650);
  std::sort(to0.begin(), to0.end());
  std::sort(to1.begin(), to1.end());
  for (vid_t k = 0; k < 150; ++k) {
    ASSERT_EQ(to0[k], 2 * k);
    ASSERT_EQ(to1[k], 2 * k + 1);
  }
}

TEST(Offsets64, PartitionStatsAndPlanPastTwoToThe32) {
  const Graph g = rmat_graph();
  const ShiftedGraph s(g);
  for (PartitionMethod method : {PartitionMethod::range, PartitionMethod::random}) {
    PartitionParams params;
    params.parts = 3;
    params.chunks = 4;
    params.method = method;
    PartitionRunInfo info_plain, info_shifted;
    const Partition p = make_partition(g.view(), {}, params, info_plain);
    Partition q = make_partition(s.view(), {}, params, info_shifted);
    EXPECT_TRUE(p.new_to_old == q.new_to_old);
    EXPECT_TRUE(p.chunk_offsets == q.chunk_offsets);  // balanced on in-degrees read through the offsets

    const PartitionStats a = compute_partition_stats(g.view(), p), b = compute_partition_stats(s.view(), q);
    EXPECT_EQ(a.alpha, b.alpha);
    EXPECT_EQ(a.edge_cut, b.edge_cut);
    ASSERT_EQ(a.chunks.size(), b.chunks.size());
    for (size_t k = 0; k < a.chunks.size(); ++k) {
      EXPECT_EQ(a.chunks[k].in_edges, b.chunks[k].in_edges);
      EXPECT_EQ(a.chunks[k].in_neighbors, b.chunks[k].in_neighbors);
    }

    // The plan builder reads the graph in new ids (ht-reorganize renumbers
    // first); here the ids are the identity's so that the shifted view is
    // the graph the plan is built from.
    Partition identity = q;
    std::iota(identity.new_to_old.begin(), identity.new_to_old.end(), 0);
    identity.old_to_new = identity.new_to_old;
    const Plan x = build_plan(g.view(), identity, {}), y = build_plan(s.view(), identity, {});
    ASSERT_EQ(x.steps.size(), y.steps.size());
    EXPECT_EQ(x.volumes.v_ori, y.volumes.v_ori);
    EXPECT_EQ(x.volumes.v_ru, y.volumes.v_ru);
    for (size_t k = 0; k < x.steps.size(); ++k) {
      const ChunkPlan &c = x.steps[k], &d = y.steps[k];
      EXPECT_TRUE(c.offsets == d.offsets && c.src_vid == d.src_vid && c.src_local == d.src_local &&
                  c.src_merged == d.src_merged && c.nbr == d.nbr && c.trans_vid == d.trans_vid &&
                  c.trans_slot == d.trans_slot && c.remote_vid == d.remote_vid && c.flush_slot == d.flush_slot)
          << "step " << k;
    }
  }
}

TEST(Offsets64, FeatureRowsPastTwoToThe32Values) {
  // N x F = 6.4e9 values: the last rows start past 2^32 (fp32 and 16-bit).
  const int64_t n = kMaxVertices32;
  const int32_t f = 3;
  const uint64_t total = static_cast<uint64_t>(n) * f, tail = 4 * f;
  SparseArray<float> x(total, total - tail, tail);
  SparseArray<uint16_t> h(total, total - tail, tail);
  for (uint64_t i = total - tail; i < total; ++i) {
    x.all()[i] = static_cast<float>(i - (total - tail));
    h.all()[i] = narrow16(static_cast<float>(i - (total - tail)), StoreDtype::bf16);
  }
  GraphView v;
  v.num_vertices = n;
  v.feature_dim = f;
  v.features = x.all();
  GraphView v16 = v;
  v16.features = {};
  v16.features16 = h.all();
  v16.feature_dtype = StoreDtype::bf16;
  std::vector<float> row(f);
  for (int64_t r = n - 4; r < n; ++r) {
    const float first = static_cast<float>((r - (n - 4)) * f);
    EXPECT_EQ(v.feature_row(r)[0], first);
    v.load_feature_row(r, row);
    EXPECT_EQ(row[2], first + 2);
    v16.load_feature_row(r, row);
    EXPECT_EQ(row[1], first + 1);
  }

  // The writer's generated rows: bytes past 2^32 map to rows past 2^30.
  FeatureRows rows;
  rows.dim = f;
  rows.fill = [](int64_t r, std::span<float> out) {
    for (size_t j = 0; j < out.size(); ++j) out[j] = static_cast<float>(r % 1000) + 0.25f * static_cast<float>(j);
  };
  const int64_t r0 = n - 10;
  std::vector<std::byte> bytes(8 * f * sizeof(float));
  fill_feature_bytes(rows, StoreDtype::f32, static_cast<uint64_t>(r0) * f * sizeof(float) + 4, bytes);
  float got[3];
  std::memcpy(got, bytes.data() + 2 * sizeof(float), sizeof got);  // row r0 + 1, from column 0
  EXPECT_EQ(got[0], static_cast<float>((r0 + 1) % 1000));
  EXPECT_EQ(got[2], static_cast<float>((r0 + 1) % 1000) + 0.5f);
}

}  // namespace ht
