#pragma once
// Plan file (.htplan): a Plan, the parameters it was made with and the
// identities of the graph and partition files it was made for. Format 2
// stores per step only what cannot be derived: the neighbor set, the chunk
// topology (offsets, src_local) and the sizes of the other lists; read_plan
// derives the transition sets, slots, remote rows, src_vid, src_merged and
// flush lists (plan_derive.hpp) and returns a Plan equal to the one written,
// field by field. Per-step arrays are concatenated into one section each with
// a per-step offset table, so reading is a few large copies, each checked
// and copied in parallel in one pass. Layout: docs/PLAN.md.
#include <algorithm>
#include <functional>
#include <string>

#include "core/container.hpp"
#include "core/timer.hpp"
#include "plan/plan.hpp"
#include "plan/plan_stats.hpp"

namespace ht {

inline constexpr char kPlanMagic[9] = "HTPLAN\0\0";
// 1: every list stored (12 bytes per edge); 2: derived lists left out.
inline constexpr uint32_t kPlanVersion = 2;

// Meta slots of the plan header (doubles are stored as their IEEE-754 bits).
enum PlanMeta : int {
  kPlanMetaM = 0,
  kPlanMetaN = 1,
  kPlanMetaVertices = 2,
  kPlanMetaGraphBytes = 3,
  kPlanMetaGraphChecksum = 4,
  kPlanMetaPartitionBytes = 5,
  kPlanMetaPartitionChecksum = 6,
  kPlanMetaCostBefore = 7,
  kPlanMetaCostAfter = 8,
  kPlanMetaSeconds = 9,
  kPlanMetaRowBytes = 10,
  kPlanMetaTHd = 11,
  kPlanMetaTDd = 12,
  kPlanMetaTRu = 13,
  kPlanMetaEdges = 14,  // Σ over steps of num_edges()
};

// Flag bits of the plan header.
enum PlanFlagBits : uint64_t {
  kPlanFlagReorganized = 1u << 0,
  kPlanFlagReorganizeRequested = 1u << 1,
};

// Where write_plan's time went. The parts run side by side, so `total` is
// about the longest of them plus `commit`, not their sum.
struct PlanWriteTimes {
  double derivation = 0;  // find_derivation_mismatch
  double sections = 0;    // the sections hashed and written (page cache)
  double alongside = 0;   // the caller's task (ht-reorganize: the symbolic check)
  double commit = 0;      // header, fsync and rename
  double total = 0;
  bool side_by_side = false;  // false: one part after another (one thread)
  // The writing's own wall time: its two parts (side by side or one after
  // the other) and the commit.
  double writing() const {
    return (side_by_side ? std::max(derivation, sections) : derivation + sections) + commit;
  }
};

// Writes atomically (temporary file + rename), each section straight from
// the steps' lists. Throws ht::Error ("internal error", nothing written)
// when a list the file leaves out is not what read_plan would derive
// (find_derivation_mismatch): the file would read back as another plan.
// That check runs side by side with the writing of the temporary file (it
// reads the plan only), as does `alongside` when given (another check of the
// same plan: ht-reorganize's symbolic check), each with this thread's OpenMP
// thread count: each part alone keeps only part of a large machine busy. The
// file is renamed into place only when all of them succeed; otherwise the
// temporary file is removed and the error of the first of (alongside, the
// derivation check, the writing) that failed is rethrown, the order in which
// they used to run one after another. The bytes do not depend on any of this.
// `sync` false (ht-reorganize --no-sync): renamed into place once in the page
// cache, without waiting for the disk (AtomicFile::set_sync).
void write_plan(const std::string& path, const Plan& plan, const PlanParams& params = {},
                const std::function<void()>& alongside = {}, PlanWriteTimes* times = nullptr, bool sync = true);

// Reads and validates a plan file: the container checks, then every index
// table and every id/index range of the stored lists, then derives the
// others and checks them against the recorded sizes and capacities, so that
// an engine can index its buffers with the plan's values without further
// bounds checks. A plan file of another format version is refused with
// "plan file format N, this build reads M: rerun ht-reorganize". The
// semantic check (does it compute the right thing) is check_plan().
// `params`, when given, receives the recorded parameters; `times`, when
// given, where the time went ("plan checksums", "plan lists", "plan derived").
Plan read_plan(const std::string& path, ReadOptions opt = {}, PlanParams* params = nullptr,
               PhaseTimes* times = nullptr);

// Throws the error above when `path` is a plan file of another format
// version; anything else (not a plan, unreadable) is left to the reader.
void check_plan_version(const std::string& path);

// Throws ht::Error "plan was made for another graph/partition: rerun
// ht-reorganize" when the plan's recorded identities differ from the given
// files' identities.
void check_plan_matches(const Plan& plan, FileIdentity graph, FileIdentity partition);

}  // namespace ht
