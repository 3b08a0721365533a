#include "train/epoch_log.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "train/metrics.hpp"

namespace ht {

namespace {

// Evaluated epochs in [from, epochs): after each eval_every-th, and the last.
int evaluations_in(int from, int epochs, int eval_every) {
  if (from >= epochs) return 0;
  const int multiples = epochs / eval_every - from / eval_every;  // (j + 1) % eval_every == 0, j in [from, epochs)
  return multiples + (epochs % eval_every != 0 ? 1 : 0);
}

}  // namespace

EpochLog::EpochLog(int first, int epochs, int eval_every, bool all)
    : first_(first), epochs_(epochs), eval_every_(std::max(eval_every, 1)), all_(all) {
  const int evaluations = evaluations_in(first_, epochs_, eval_every_);
  const int every = std::max(1, (evaluations + kEpochLines - 1) / kEpochLines);  // evaluations per line
  stride_ = every * eval_every_;
}

void EpochLog::add(double seconds, double eval_seconds, bool evaluated) {
  train_.push_back(std::max(seconds - eval_seconds, 0.0));
  if (evaluated) eval_.push_back(eval_seconds);
}

bool EpochLog::shown(int e, bool last) const {
  if (all_ || last || e + 1 == epochs_) return true;
  // The first evaluated epoch says that training runs and how fast (no
  // multiple of eval_every among the epochs counted before it).
  if (e / eval_every_ == first_ / eval_every_) return true;
  return (e + 1) % stride_ == 0;
}

double EpochLog::seconds_left(int e) const {
  const int epochs_left = std::max(epochs_ - (e + 1), 0);
  const int evals_left = evaluations_in(e + 1, epochs_, eval_every_);
  return epochs_left * median_of(train_) + evals_left * median_of(eval_);
}

std::string EpochLog::prefix(int e) const {
  const int width = static_cast<int>(fmt::formatted_size("{}", epochs_));
  return fmt::format("epoch {:>{}}/{} | ", e, width, epochs_);
}

std::string duration_text(double seconds) {
  if (!(seconds >= 0)) seconds = 0;
  if (seconds < 10) return fmt::format("{:.1f} s", seconds);
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

}  // namespace ht
