#include "partition/ml_contract.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include <omp.h>

#include "core/bulk_memory.hpp"
#include "partition/ml_rating.hpp"

namespace ht::ml {
namespace {

// Renumbers the labels to 0..count-1 in label order; returns the count.
int64_t compact_labels(std::vector<vid_t>& label) {
  const int64_t n = static_cast<int64_t>(label.size());
  std::vector<int64_t> rank;
  resize_for_overwrite(rank, static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) std::atomic_ref<int64_t>(rank[label[v]]).store(1, std::memory_order_relaxed);
  parallel_inclusive_scan(rank);  // rank[c] = labels in use that are <= c
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) label[v] = static_cast<vid_t>(rank[label[v]] - 1);
  return n == 0 ? 0 : rank[n - 1];
}

// Members of each coarse vertex: members[off[c] .. off[c + 1]). The order
// inside a list depends on timing; nothing below depends on it (sums of
// integers, rows sorted by neighbor).
void member_lists(const std::vector<vid_t>& coarse_of, int64_t count, std::vector<int64_t>& off,
                  std::vector<vid_t>& members) {
  const int64_t n = static_cast<int64_t>(coarse_of.size());
  resize_for_overwrite(off, static_cast<size_t>(count) + 1);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v)
    std::atomic_ref<int64_t>(off[coarse_of[v] + 1]).fetch_add(1, std::memory_order_relaxed);
  parallel_inclusive_scan(off);  // off[c + 1] = end of list c
  resize_for_overwrite(members, static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) {
    const int64_t at = std::atomic_ref<int64_t>(off[coarse_of[v] + 1]).fetch_sub(1, std::memory_order_relaxed) - 1;
    members[at] = static_cast<vid_t>(v);
  }
  // off[c + 1] is now the start of list c: shift into place.
  std::memmove(off.data(), off.data() + 1, static_cast<size_t>(count) * sizeof(int64_t));
  off[count] = n;
}

// A piece of a block of coarse rows: rows [first, last) computed by one task
// into arrays of its own, joined into their block afterwards.
struct Piece {
  int64_t block = 0, first = 0, last = 0;
  std::vector<int64_t> ends;  // row ends, relative to the piece
  std::vector<vid_t> targets;
  std::vector<weight_t> weights;
};

// Splits every block of coarse rows into pieces of about `target` work (the
// member degrees of its rows; a row is never split), so that levels with few
// blocks of heavy rows still spread over all threads: with 1024-row blocks as
// the tasks, a chunk run's input level (24 k coarse rows from 15 M vertices,
// friendster-like) gave 24 tasks to 16 threads. Pieces change which thread
// computes a row, never the row.
std::vector<Piece> make_pieces(const std::vector<int64_t>& work, int64_t count, int64_t target) {
  const int64_t blocks = (count + CoarseLevel::kBlockRows - 1) / CoarseLevel::kBlockRows;
  std::vector<Piece> pieces;
  pieces.reserve(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t first = b * CoarseLevel::kBlockRows;
    const int64_t last = std::min(count, first + CoarseLevel::kBlockRows);
    int64_t at = first, sum = 0;
    for (int64_t c = first; c < last; ++c) {
      sum += work[c];
      if (sum >= target && c + 1 < last) {
        pieces.push_back(Piece{b, at, c + 1, {}, {}, {}});
        at = c + 1;
        sum = 0;
      }
    }
    pieces.push_back(Piece{b, at, last, {}, {}, {}});
  }
  return pieces;
}

}  // namespace

template <typename G>
CoarseLevel contract(const G& g, std::vector<vid_t>& label, Progress& progress) {
  const int64_t count = compact_labels(label);
  std::vector<int64_t> off;
  std::vector<vid_t> members;
  member_lists(label, count, off, members);
  std::vector<weight_t> vertex_weights;
  resize_for_overwrite(vertex_weights, static_cast<size_t>(count));
  std::vector<int64_t> work;
  resize_for_overwrite(work, static_cast<size_t>(count));
  int64_t total_work = 0;
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : total_work)
  for (int64_t c = 0; c < count; ++c) {
    weight_t vw = 0;
    int64_t degrees = 0;
    for (int64_t i = off[c]; i < off[c + 1]; ++i) {
      vw += g.vertex_weight(members[i]);
      degrees += g.degree(members[i]);
    }
    vertex_weights[c] = vw;
    work[c] = degrees + (off[c + 1] - off[c]);
    total_work += work[c];
  }
  constexpr int64_t kPiecesPerThread = 8;
  constexpr int64_t kMinPieceWork = int64_t{1} << 16;
  const int64_t target = std::max(kMinPieceWork, total_work / (kPiecesPerThread * omp_get_max_threads()));
  std::vector<Piece> pieces = make_pieces(work, count, target);
  const int64_t num_pieces = static_cast<int64_t>(pieces.size());
  // A coarse level of at most kDenseKeys vertices (2 MB of weights per
  // thread) sums a row in a plain array, else in a hash map sized per row.
  // Rows are sorted either way: the same rows.
  constexpr int64_t kDenseKeys = int64_t{1} << 18;
#pragma omp parallel
  {
    auto rows_of_pieces = [&](auto& map) {
      std::vector<std::pair<vid_t, weight_t>> row, buffer;
      std::vector<vid_t> targets;
      std::vector<weight_t> weights;
#pragma omp for schedule(dynamic, 1)
      for (int64_t p = 0; p < num_pieces; ++p) {
        Piece& out = pieces[p];
        out.ends.resize(static_cast<size_t>(out.last - out.first));
        targets.clear();
        weights.clear();
        int64_t done = 0;
        for (int64_t c = out.first; c < out.last; ++c) {
          const int64_t degrees = work[c] - (off[c + 1] - off[c]);
          done += degrees;
          // Sized for the distinct neighbors there can be; grows if needed.
          map.start(std::min<int64_t>({degrees, count, int64_t{1} << 16}));
          for (int64_t i = off[c]; i < off[c + 1]; ++i) add_neighbor_labels(g, members[i], label, map, buffer);
          row.clear();
          map.for_each([&](vid_t cu, weight_t w) {
            if (cu != static_cast<vid_t>(c)) row.emplace_back(cu, w);  // edges inside the cluster vanish
          });
          map.clear();
          std::sort(row.begin(), row.end());
          for (const auto& [cu, w] : row) {
            targets.push_back(cu);
            weights.push_back(w);
          }
          out.ends[c - out.first] = static_cast<int64_t>(targets.size());
        }
        out.targets.assign(targets.begin(), targets.end());
        out.weights.assign(weights.begin(), weights.end());
        progress.add(done);
      }
    };
    if (count <= kDenseKeys) {
      DenseRatings map(count);
      rows_of_pieces(map);
    } else {
      RatingMap map;
      rows_of_pieces(map);
    }
  }
  // Each block's exactly sized arrays from its pieces (consecutive in
  // `pieces`); a block of one piece takes its arrays as they are.
  const int64_t blocks = (count + CoarseLevel::kBlockRows - 1) / CoarseLevel::kBlockRows;
  std::vector<int64_t> first_piece(static_cast<size_t>(blocks) + 1, num_pieces);
  for (int64_t p = num_pieces - 1; p >= 0; --p) first_piece[pieces[p].block] = p;
  std::vector<CoarseLevel::Block> rows(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < blocks; ++b) {
    CoarseLevel::Block& out = rows[b];
    const int64_t p0 = first_piece[b], p1 = first_piece[b + 1];
    out.offsets.assign(static_cast<size_t>(pieces[p1 - 1].last - pieces[p0].first) + 1, 0);
    int64_t entries = 0;
    for (int64_t p = p0; p < p1; ++p) {
      const Piece& piece = pieces[p];
      for (int64_t c = piece.first; c < piece.last; ++c)
        out.offsets[c - pieces[p0].first + 1] = entries + piece.ends[c - piece.first];
      entries += static_cast<int64_t>(piece.targets.size());
    }
    if (p1 - p0 == 1) {
      out.targets = std::move(pieces[p0].targets);
      out.weights = std::move(pieces[p0].weights);
      continue;
    }
    out.targets.reserve(static_cast<size_t>(entries));
    out.weights.reserve(static_cast<size_t>(entries));
    for (int64_t p = p0; p < p1; ++p) {
      Piece& piece = pieces[p];
      out.targets.insert(out.targets.end(), piece.targets.begin(), piece.targets.end());
      out.weights.insert(out.weights.end(), piece.weights.begin(), piece.weights.end());
      std::vector<vid_t>().swap(piece.targets);
      std::vector<weight_t>().swap(piece.weights);
    }
  }
  return CoarseLevel(std::move(rows), std::move(vertex_weights), g.symmetric_neighbors());
}

template CoarseLevel contract<FineLevel>(const FineLevel&, std::vector<vid_t>&, Progress&);
template CoarseLevel contract<CoarseLevel>(const CoarseLevel&, std::vector<vid_t>&, Progress&);

}  // namespace ht::ml
