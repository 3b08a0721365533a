#pragma once
// Training checkpoints (--checkpoint / --resume): everything a run needs to
// continue exactly where it stopped, so that an interrupted and resumed run
// ends with the same parameters, metrics and predictions, bit for bit, as an
// uninterrupted one: parameters, optimizer state (step count, Adam moments or
// SGD momentum), epochs done (dropout masks are a pure function of seed,
// epoch, layer, vertex and column, so the epoch is the whole random state),
// best-validation bookkeeping and the metrics lines so far; and what it was
// made for (graph, partition and plan identities, model shape, optimizer,
// host dtype), so that a checkpoint of another run is refused.
// A container file (magic "HTCKPT\0\0"); docs/FORMATS.md, "Training checkpoint".
#include <cstdint>
#include <string>
#include <vector>

#include "core/container.hpp"
#include "models/model.hpp"

namespace ht {

inline constexpr char kCheckpointMagic[9] = "HTCKPT\0\0";
inline constexpr uint32_t kCheckpointVersion = 1;

// What a checkpoint must match to be resumed.
struct CheckpointTarget {
  FileIdentity graph, partition, plan;  // partition/plan zero: built in memory
  int m = 1, n = 1;
  std::string model;  // "gcn 1433-16-7 heads 1 out_heads 1 bias 1"
  std::string optimizer;
  std::string host_dtype = "fp32";
  bool normalize_features = false;
  bool operator==(const CheckpointTarget&) const = default;
};

struct TrainCheckpoint {
  CheckpointTarget target;
  std::string hyperparameters;  // lr, decay, dropout, seed...: a resume with others is warned about
  int epochs_done = 0;
  int epochs_planned = 0;
  int64_t optimizer_steps = 0;
  int best_epoch = -1;
  double best_val_acc = 0, test_acc_at_best_val = 0;
  double final_loss = 0, final_train_acc = 0, final_val_acc = 0, final_test_acc = 0;
  std::vector<ParamTensor> tensors;         // values only (names, shapes)
  std::vector<std::vector<float>> m, v;     // optimizer moments per tensor
  std::string metrics;                      // JSON lines of the epochs done
  // The best validation epoch's parameter values (--outputs-from best; empty
  // in checkpoints of older versions: the optional section "best_params").
  std::vector<ParamTensor> best_tensors;
  int evals_since_best = 0;  // --early-stop's count
  // Seconds since the start of training and of the process, summed over the
  // runs so far (a resumed run's clocks go on from them), and when the best
  // epoch and the target accuracy were reached (target_epoch -1: not yet).
  double train_seconds = 0, process_seconds = 0;
  double best_train_seconds = 0, best_process_seconds = 0;
  int target_epoch = -1;
  double target_train_seconds = 0, target_process_seconds = 0;
  double target_acc = -1;  // the --target-acc those are for (negative: none)
};

// Written atomically (temporary file renamed into place).
void write_train_checkpoint(const std::string& path, const TrainCheckpoint& c);
TrainCheckpoint read_train_checkpoint(const std::string& path, bool verify_checksums = true);

// Throws a one-line error naming what differs between the checkpoint at
// `path` and this run.
void check_checkpoint_target(const std::string& path, const CheckpointTarget& saved, const CheckpointTarget& now);

// The model shape string of CheckpointTarget::model.
std::string model_shape(const ModelConfig& m);

}  // namespace ht
