#pragma once
// One ht-train run: load the graph (and the partition and plan, or build them
// in memory), train for a number of epochs with periodic evaluation (or only
// predict), and write the metrics file, model, predictions and logits.
//
// Outputs are checked before any work (writable, none of them an input or
// another output) and renamed into place together at the end: a failed run
// leaves none of them. Training checkpoints (--checkpoint) are the exception:
// each is written, atomically, when it is due. The run stops with an error at
// the first epoch whose loss, gradients or parameters are not finite.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/memory_limit.hpp"
#include "core/names.hpp"
#include "core/timer.hpp"
#include "engine/executor.hpp"
#include "engine/link_bandwidth.hpp"
#include "engine/host_memory_plan.hpp"
#include "engine/spmm_backend.hpp"
#include "engine/trainer.hpp"
#include "engine/transport.hpp"
#include "train/metrics.hpp"

namespace ht {

// Where the vertex store lives: auto = on the GPU for m = 1, n = 1 when it fits.
enum class StoreChoice { automatic, host, device };
// "auto", "host", "device": ht-train --store.
const NameTable<StoreChoice>& store_choice_names();

// The executor of a run: cpu (the reference executor, emulating the GPUs) or
// cuda. ht-train resolves auto (cuda when its build has the CUDA executor and
// a GPU is visible, else cpu) before the job runs; a job is cpu or cuda.
enum class Backend { automatic, cpu, cuda };
// "auto", "cpu", "cuda": ht-train --backend.
const NameTable<Backend>& backend_names();
std::string name_of(Backend backend);

// Which parameters --predict-out, --logits-out, --embeddings-out and --save-model hold: those of the best validation epoch (the epoch whose
// test accuracy the summary reports), or of the last epoch trained.
enum class OutputsFrom { best, last };
// "best", "last": ht-train --outputs-from.
const NameTable<OutputsFrom>& outputs_from_names();

struct TrainJob {
  std::string graph_path, partition_path, plan_path;
  bool verify_checksums = true;
  // In-memory pipeline when no plan is given: m = parts, n = chunks;
  // chunks = kChunksAuto (0): the smallest n that fits (train/chunk_choice.hpp).
  int parts = 1, chunks = 1;
  // --gpu-mem in bytes (0: not given): the budget of --chunks auto (the CUDA
  // executor's cap is the executor factory's).
  int64_t gpu_mem_bytes = 0;
  // The memory the executor will have on each of GPUs 0..devices-1 (the
  // smallest), asked by --chunks auto before the executor exists; ht-train
  // sets it for --backend cuda. Empty: no device memory (the CPU backend).
  std::function<int64_t(int devices)> device_memory;
  TrainerOptions trainer;  // model.dims empty = F-hidden-C from the graph
  int hidden = 0;           // for empty dims; 0 = 16 (GCN) or 8 (GAT)
  int epochs = 200;
  int eval_every = 1;
  int warmup = 3;  // epochs left out of the median epoch time
  bool normalize_features = false;
  StoreChoice store = StoreChoice::automatic;
  // TrainerOptions::store_pages_first where the store goes beside the device
  // plans: its pages before their steps (--store-pages-first), else all of
  // it beside them (the order before; neither was clearly faster where
  // measured: bench/RESULTS.md, session 14).
  bool store_pages_first = false;
  // Setup's phases one after another (--setup-in-sequence), as before issue
  // 33's overlap: the link probe first, the executor after the plan. By
  // default the probe and the executor start beside the files' reading
  // (train/early_devices.hpp). Same results.
  bool setup_in_sequence = false;
  std::string metrics_out, save_model, load_model, predict_out;
  std::string logits_out;       // .npy [N, C] of the final (or --predict-only) forward
  std::string checkpoint_path;  // training checkpoint, written every checkpoint_every epochs,
  int checkpoint_every = 1;     // at the end and when stopped by a signal
  std::string resume_path;      // continue from this checkpoint (may equal checkpoint_path)
  bool predict_only = false;    // forward only, from --load-model or --resume
  OutputsFrom outputs_from = OutputsFrom::best;
  // --embeddings-out: .npy [N, width] of layer `embeddings_layer`'s output
  // h^l (1 .. L; L = the logits), rows in graph file order, of the epoch
  // outputs_from picks (or of the --predict-only forward).
  std::string embeddings_out;
  int embeddings_layer = 1;
  // Stop criteria (besides --epochs): no better validation accuracy in
  // `early_stop` evaluations (0: off), validation accuracy >= target_acc
  // (negative: off), or at least time_limit seconds of training at an
  // evaluation (0: off; a wall-clock cap that still ends with the summary and
  // the outputs, which a signal does not).
  int early_stop = 0;
  double target_acc = -1;
  double time_limit = 0;
  // --runs: this run's index (0-based) recorded in every metrics line; -1:
  // a single run (no "run" field).
  int run_index = -1;
  // false: the metrics lines are only collected (TrainSummary::metrics_text),
  // metrics_out is checked but not written (--runs writes every run's at the end).
  bool write_metrics = true;
  // What the metrics summary records of the command: every option with its
  // value (given or default), in --help order. Empty: none recorded.
  std::vector<std::pair<std::string, std::string>> options;
  // Polled after every epoch: a signal number (SIGINT, SIGTERM) stops the run
  // after that epoch (with a checkpoint when one is configured) by throwing
  // signals::Interrupted. Empty: never stops.
  std::function<int()> stop_requested;
  std::string timeline_out;  // JSON: the last timed epoch's busy intervals per device queue
  Backend backend = Backend::cpu;  // what the executor factory makes (cpu or cuda, never auto)
  // --spmm: who computes the CUDA executor's sparse products (the executor
  // factory passes it on; the CPU executor has one implementation).
  SpmmBackend spmm = SpmmBackend::automatic;
  // Measures GPU 0's host link at start-up; ht-train sets it for --backend
  // cuda (this library is built without CUDA). Empty: the bound is not measured.
  std::function<LinkBandwidth()> probe_link;
  // --host-mem: the host memory the run may use (0: what the machine and the
  // process's cgroups leave, detected); a run whose plan needs more is
  // refused before anything large is allocated (train/host_memory_check.hpp).
  int64_t host_mem_bytes = 0;
  // Whether this build has the CUDA executor and a GPU is visible (the host
  // memory check then may advise --backend cuda); asked only when a run does
  // not fit. Empty: no.
  std::function<bool()> cuda_available;
  // The job's processes (mpirun / srun; lib/dist), null for one process. With
  // P processes each drives m / P of the plan's GPUs and holds their
  // partitions' rows; process 0 alone writes the outputs (metrics, model,
  // predictions, logits, timeline, checkpoints).
  Transport* transport = nullptr;
};

// When something happened in a run: epoch, and seconds from the start of
// training (the first epoch of this run, plus the training time of the runs
// it resumed) and from the start of the process (plus the process time of
// the runs it resumed, up to their checkpoint).
struct RunTime {
  int epoch = -1;  // -1: not (yet) happened
  double train_seconds = 0, process_seconds = 0;
};

struct TrainSummary {
  int epochs = 0;         // epochs trained in all (resumed ones included); fewer than planned when stopped early
  int epochs_planned = 0;
  std::string stop_reason;  // "epochs", "early stop (patience P)", "target accuracy A reached"
  uint64_t seed = 0;
  int run_index = -1;
  // false: the metrics lines are only collected (TrainSummary::metrics_text),
  // metrics_out is checked but not written (--runs writes every run's at the end).
  bool write_metrics = true;
  RunTime best_time;      // of the best validation epoch's evaluation
  RunTime target_time;    // of the first evaluation at or above --target-acc
  double train_seconds = 0;  // the whole training loop (resumed runs' included)
  std::string outputs_from;  // "best epoch N" / "last epoch N" (empty: no output written)
  std::string metrics_text;  // the metrics lines of this run (also when not written to a file: --runs)
  int resumed_from = 0;  // epochs restored from --resume (0: none)
  bool predicted_only = false;
  bool has_labels = false;
  int best_epoch = -1;
  double best_val_acc = 0, test_acc_at_best_val = 0;
  double final_loss = 0, final_train_acc = 0, final_val_acc = 0, final_test_acc = 0;
  int warmup_used = 0;  // epochs left out of the medians (fewer than asked when epochs are few)
  double epoch_ms_median = 0;
  double h2d_ms_median = 0, d2d_ms_median = 0, compute_ms_median = 0, cpu_ms_median = 0;  // busy times
  // The compute queues' busy time per GPU (this process's): medians over the
  // timed epochs of the slowest GPU's and of the mean.
  double gpu_busy_max_ms_median = 0, gpu_busy_mean_ms_median = 0;
  ExposedTimes exposed_ms_median;  // the epoch split by what was exposed (ms)
  double eval_ms_median = 0;       // evaluation forward, evaluations after warm-up
  int evaluations_timed = 0;
  LinkCounters per_epoch;  // bytes and rows moved in one training epoch
  int64_t forward_h2d_bytes = 0, forward_d2h_bytes = 0;  // of per_epoch, moved by the forward passes
  int64_t peak_device_bytes = 0, host_buffer_bytes = 0, peak_rss_bytes = 0;
  // What the GPU cache holds (Trainer::gpu_cache_held; bytes and tier rows: the largest process's).
  int64_t gpu_cache_bytes = 0, gpu_cache_tier_rows = 0;
  int64_t gpu_cache_saved_estimate = 0;  // host-link and host-add bytes per epoch the cache's choice saves (GPU 0)
  std::string gpu_cache_what;
  StoreDtype host_dtype = StoreDtype::f32;  // of the vertex store (fp32 when it is on a device)
  double setup_seconds = 0;  // everything before the first epoch (link probe included)
  PhaseTimes setup_phases;   // where setup's seconds went, in order
  double setup_user_seconds = 0, setup_system_seconds = 0;  // the process's CPU seconds over setup
  int gpus = 1;           // of the job
  int processes = 1;
  int setup_threads = 0;  // OpenMP threads of setup (train/setup_threads.hpp)
  bool link_measured = false;
  LinkBandwidth link;    // when link_measured
  LinkBound link_bound;  // when link_measured
  PhaseLinkBound link_phase_bound;  // when link_measured
  double link_probe_seconds = 0;
  HostMemoryPlan host_plan;    // planned before setup (engine/host_memory_plan.hpp)
  HostMemoryLimit host_limit;  // what it was checked against
};

// Makes the executor of this process: `num_devices` GPUs (or emulated devices),
// the plan's m divided by the job's processes.
using ExecutorFactory = std::function<std::unique_ptr<Executor>(int num_devices)>;

TrainSummary run_train_job(const TrainJob& job, const ExecutorFactory& make_executor);

// Seconds since this process started (Linux /proc; 10 ms resolution).
double process_seconds();
// The current UTC time as ISO 8601, "2026-11-26T17:50:00Z".
std::string utc_now_iso8601();

}  // namespace ht
