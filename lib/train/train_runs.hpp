#pragma once
// ht-train --runs K: the same training K times with seeds seed, seed + 1, ...
// (initialization and dropout differ), reported as OGB's examples report:
// the mean and standard deviation over the runs of the test accuracy at the
// best validation epoch, and of the time to that epoch. The metrics file
// holds every run's lines (each with "run": k) and a final "runs" record.
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "train/train_job.hpp"

namespace ht {

// Mean and sample standard deviation (n - 1 in the denominator, as
// torch.std in OGB's Logger; 0 for fewer than two values).
struct MeanStd {
  double mean = 0, std = 0;
};
MeanStd mean_std(std::span<const double> values);

struct RunsSummary {
  std::vector<TrainSummary> runs;
  MeanStd test_acc;             // test accuracy at the best validation epoch
  MeanStd best_train_seconds;   // from the start of training to the best epoch's evaluation
  MeanStd best_process_seconds; // from the start of the process (later runs include the earlier ones)
  int target_reached = 0;       // runs that reached --target-acc
  MeanStd target_train_seconds; // over the runs that reached it
};

// One run (runs = 1) is run_train_job as it is. Several refuse the outputs
// that hold one run's state (model, predictions, logits, checkpoints,
// timeline): which run's would they be?
RunsSummary run_train_runs(const TrainJob& job, int runs, const ExecutorFactory& make_executor);

// "run 2 (seed 3): best validation 0.8120 at epoch 57, test 0.8030, 12.4 s to it (train), 14.9 s (process)".
std::string run_line(const TrainSummary& s);
// "3 runs: test accuracy at best validation 0.8013 ± 0.0042; time to it 11.2 ± 0.9 s (train)".
std::string runs_line(const RunsSummary& r);

}  // namespace ht
