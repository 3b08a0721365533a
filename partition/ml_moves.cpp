#include "partition/ml_moves.hpp"

#include <omp.h>

#include <parallel/algorithm>

#include <algorithm>
#include <atomic>

#include "core/bulk_memory.hpp"
#include "core/log.hpp"
#include "core/rng.hpp"

namespace ht::ml {
namespace {

// Fixed block size of the parallel scans below: the blocks, and so the
// results, do not depend on the number of threads.
constexpr int64_t kBlock = int64_t{1} << 16;

int64_t blocks_of(int64_t n) { return (n + kBlock - 1) / kBlock; }

// At least n elements, the contents dropped when it grows (MoveBuffers).
void grow_to(std::vector<Move>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) resize_for_overwrite(v, static_cast<size_t>(n));
}

// The sort order of contested moves: by target, then best first. Unique
// (v is), so every correct sort, parallel or not, gives the same order.
bool before(const Move& a, const Move& b) {
  if (a.target != b.target) return a.target < b.target;
  if (a.gain != b.gain) return a.gain > b.gain;
  if (a.tie != b.tie) return a.tie < b.tie;
  return a.v < b.v;
}

}  // namespace

SubRounds make_sub_rounds(int64_t n, int count, uint64_t seed, uint64_t key) {
  const int64_t blocks = blocks_of(n);
  const size_t c = static_cast<size_t>(count);
  // Per block and sub-round: how many vertices, then where they go.
  std::vector<int64_t> at(static_cast<size_t>(blocks) * c, 0);
  auto bucket = [&](int64_t v) { return static_cast<size_t>(rng::hash(seed, key, static_cast<uint64_t>(v)) % c); };
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t v = b * kBlock; v < std::min(n, (b + 1) * kBlock); ++v) ++at[static_cast<size_t>(b) * c + bucket(v)];
  SubRounds s;
  s.begin.assign(c + 1, 0);
  int64_t sum = 0;
  for (size_t r = 0; r < c; ++r) {
    s.begin[r] = sum;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k = at[static_cast<size_t>(b) * c + r];
      at[static_cast<size_t>(b) * c + r] = sum;
      sum += k;
    }
  }
  s.begin[c] = sum;
  resize_for_overwrite(s.order, static_cast<size_t>(n));
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t v = b * kBlock; v < std::min(n, (b + 1) * kBlock); ++v)
      s.order[at[static_cast<size_t>(b) * c + bucket(v)]++] = static_cast<vid_t>(v);
  return s;
}

int64_t proposal_grain(int64_t count) {
  constexpr int64_t kMaxGrain = 1024;
  constexpr int64_t kTasksPerThread = 8;
  return std::clamp<int64_t>(count / (kTasksPerThread * omp_get_max_threads()), 1, kMaxGrain);
}

void compact_moves(std::span<const Move> proposals, MoveBuffers& out) {
  const int64_t n = static_cast<int64_t>(proposals.size());
  const int64_t blocks = blocks_of(n);
  std::vector<int64_t> start(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b)
    start[b + 1] = std::count_if(proposals.begin() + b * kBlock, proposals.begin() + std::min(n, (b + 1) * kBlock),
                                 [](const Move& m) { return m.target != kNoTarget; });
  for (int64_t b = 0; b < blocks; ++b) start[b + 1] += start[b];
  grow_to(out.moves, start[blocks]);
  out.count = start[blocks];
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b)
    std::copy_if(proposals.begin() + b * kBlock, proposals.begin() + std::min(n, (b + 1) * kBlock),
                 out.moves.begin() + start[b], [](const Move& m) { return m.target != kNoTarget; });
}

std::vector<Move> compact_moves(std::span<const Move> proposals) {
  MoveBuffers b;
  compact_moves(proposals, b);
  b.moves.resize(static_cast<size_t>(b.count));
  return std::move(b.moves);
}

void accept_moves(MoveBuffers& buf, std::span<const weight_t> load, weight_t limit, std::vector<weight_t>& incoming) {
  const int64_t n = buf.count;
  const std::span<const Move> moves = buf.selected();
  // Integer sums: the same whatever order the threads add in.
#pragma omp parallel for schedule(static) if (n >= kSerialBelow)
  for (int64_t i = 0; i < n; ++i)
    std::atomic_ref<weight_t>(incoming[moves[i].target]).fetch_add(moves[i].w, std::memory_order_relaxed);
  // Targets with room for everything take everything; the others' moves are
  // "contested".
  auto fits = [&](const Move& m) { return load[m.target] + incoming[m.target] <= limit; };
  auto reset = [&](std::span<const Move> ms) {
#pragma omp parallel for schedule(static) if (static_cast<int64_t>(ms.size()) >= kSerialBelow)
    for (int64_t i = 0; i < static_cast<int64_t>(ms.size()); ++i)
      std::atomic_ref<weight_t>(incoming[ms[i].target]).store(0, std::memory_order_relaxed);
  };
  int64_t contested_count = 0;
#pragma omp parallel for schedule(static) reduction(+ : contested_count) if (n >= kSerialBelow)
  for (int64_t i = 0; i < n; ++i) contested_count += fits(moves[i]) ? 0 : 1;
  if (contested_count == 0) {  // the common case while clustering
    reset(moves);
    return;
  }
  // The moves that fit and the contested ones, each in their order: fixed
  // blocks in parallel (round 0 of an input level's clustering has a move for
  // most vertices, millions per sub-round; serial, this was one of the few
  // passes that did not scale).
  const int64_t blocks = blocks_of(n);
  std::vector<int64_t> kept_at(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b)
    kept_at[b + 1] = std::count_if(moves.begin() + b * kBlock, moves.begin() + std::min(n, (b + 1) * kBlock), fits);
  for (int64_t b = 0; b < blocks; ++b) kept_at[b + 1] += kept_at[b];
  // Room for the contested moves that are accepted after the kept ones.
  grow_to(buf.kept, n);
  grow_to(buf.contested, n - kept_at[blocks]);
  std::vector<Move>& kept = buf.kept;
  std::vector<Move>& contested_at = buf.contested;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t k = kept_at[b], c = b * kBlock - kept_at[b];
    for (int64_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) {
      if (fits(moves[i]))
        kept[k++] = moves[i];
      else
        contested_at[c++] = moves[i];
    }
  }
  const std::span<Move> contested(contested_at.data(), static_cast<size_t>(n - kept_at[blocks]));
  int64_t count = kept_at[blocks];
  reset(std::span<const Move>(kept.data(), static_cast<size_t>(count)));
  reset(contested);
  if (contested.size() > (size_t{1} << 16))
    __gnu_parallel::sort(contested.begin(), contested.end(), before);
  else
    std::sort(contested.begin(), contested.end(), before);
  weight_t room = 0;
  for (size_t i = 0; i < contested.size(); ++i) {
    const Move& m = contested[i];
    if (i == 0 || m.target != contested[i - 1].target) room = limit - load[m.target];
    if (m.w <= room) {
      room -= m.w;
      kept[count++] = m;
    }
  }
  buf.moves.swap(buf.kept);
  buf.count = count;
}

void accept_moves(std::vector<Move>& moves, std::span<const weight_t> load, weight_t limit,
                  std::vector<weight_t>& incoming) {
  MoveBuffers b;
  b.count = static_cast<int64_t>(moves.size());
  b.moves = std::move(moves);
  accept_moves(b, load, limit, incoming);
  b.moves.resize(static_cast<size_t>(b.count));
  moves = std::move(b.moves);
}

std::string StepTimes::summary() const {
  return fmt::format("{} rounds / {} sub-rounds: setup {:.3f} s, propose {:.3f} s, select {:.3f} s, apply {:.3f} s, "
                     "mark {:.3f} s",
                     rounds, sub_rounds, setup, propose, select, apply, mark);
}

ActiveSet::ActiveSet(int64_t n) : state_(static_cast<size_t>(n), kNow) {}

}  // namespace ht::ml
