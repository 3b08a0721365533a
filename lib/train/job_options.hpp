#pragma once
// The options of ht-train that every process of a job must be given alike
// (train/job_processes.hpp compares them at start): those that shape the
// model, the training, the schedule of the processes' exchanges, or which
// collective steps a process takes (evaluation, outputs gathered on every
// process). Outputs that process 0 alone writes, --host-mem and the like may
// differ.
#include <string>
#include <vector>

#include "train/train_job.hpp"

namespace ht {

// One option as the command line names it, with its value in a canonical text.
struct JobOption {
  std::string name;   // "--hidden"
  std::string value;  // "16"
};

std::vector<JobOption> options_that_must_agree(const TrainJob& job);

}  // namespace ht
