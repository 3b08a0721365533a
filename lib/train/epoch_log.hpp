#pragma once
// ht-train's per-epoch lines on stderr: which evaluated epochs get one at the
// default verbosity (a 200-epoch run printed 200 lines: at most about
// kEpochLines now, plus the last and the best; -v prints every one), their
// "epoch i/N" and the time left, estimated from the medians so far. The
// metrics file keeps every epoch whatever is printed.
#include <string>
#include <vector>

namespace ht {

class EpochLog {
 public:
  static constexpr int kEpochLines = 20;

  // Epochs first .. epochs - 1 of this run, evaluated after every
  // `eval_every`-th and the last; `all`: every evaluated epoch gets its line.
  EpochLog(int first, int epochs, int eval_every, bool all);

  // Epoch e (evaluated or not) took `seconds` of wall time in all, `eval_seconds` of them evaluating.
  void add(double seconds, double eval_seconds, bool evaluated);

  // Whether evaluated epoch e gets its line: the first evaluated one, every
  // stride()-th, the last (or `last`: the run stops after it), or all.
  bool shown(int e, bool last) const;

  // Epochs between two lines at the default verbosity (a multiple of eval_every).
  int stride() const { return stride_; }

  // After epoch e: the median epoch (without its evaluation) times the epochs
  // left plus the median evaluation times the evaluations left, in seconds.
  double seconds_left(int e) const;

  // "epoch  155/200 | " with the epoch number as wide as N.
  std::string prefix(int e) const;

 private:
  int first_, epochs_, eval_every_, stride_;
  bool all_;
  std::vector<double> train_, eval_;
};

// "0.4 s", "12 s", "3 min 05 s", "2 h 07 min": a time left, as wide as it needs.
std::string duration_text(double seconds);

}  // namespace ht
