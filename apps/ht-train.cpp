// ht-train: trains GCN or GAT over a plan (or an in-memory partition) on the
// CPU reference executor or the CUDA executor.
#include <sched.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/memory_limit.hpp"
#include "core/signals.hpp"
#include "dist/connect.hpp"
#include "dist/launch.hpp"
#include "engine/cpu_executor.hpp"
#include "train/host_memory_check.hpp"
#include "train/train_job.hpp"
#include "train/train_runs.hpp"
#include "train_options.hpp"
#ifdef HT_HAVE_CUDA
#include "cuda/cuda_executor.hpp"
#include "cuda/cuda_memory.hpp"
#include "cuda/link_probe.hpp"
#endif

namespace {

struct Context {
  ht::TrainJob job;
  std::string layers = "auto";
  int hidden = 0;
  ht::ModelKind model = ht::ModelKind::gcn;
  ht::OptimizerKind optimizer = ht::OptimizerKind::adam;
  ht::Backend backend = ht::Backend::automatic;
  int gpus = 0;
  std::string gpu_mem = "0";  // --gpu-mem SIZE (a bare number: GiB)
  std::string chunks = "1";
  std::string host_mem = "auto";
  std::string gpu_cache = "auto";
  int runs = 1;
  double peer_timeout = 1800;  // --peer-timeout, seconds (0: none)
  ht::cli::CommonOptions common;
};

// --help lists the options in groups (KaMinPar-style), in this order.
void group_options(CLI::App& app) {
  static const std::vector<std::pair<const char*, std::vector<const char*>>> groups = {
      {"Input", {"--graph", "--partition", "--plan", "--normalize-features", "--no-verify"}},
      {"Model", {"--model", "--layers", "--hidden", "--heads", "--out-heads", "--dropout", "--attn-dropout", "--no-bias"}},
      {"Optimization",
       {"--optimizer", "--lr", "--weight-decay", "--decay-first-layer-only", "--momentum", "--epochs", "--eval-every",
        "--warmup", "--seed", "--early-stop", "--target-acc", "--runs"}},
      {"Execution",
       {"--backend", "--spmm", "--gpus", "--chunks", "--comm", "--gcn-order", "--store", "--host-dtype", "--gpu-mem", "--gpu-cache", "--host-mem", "--peer-timeout", "--steps",
        "--merged-buffers", "--no-overlap", "--no-early-start", "--no-fuse-transforms",
        "--no-gradient-handoff", "--no-device-forwarding", "--no-gpu-accumulate", "--no-tier-returns",
        "--store-pages-first", "--setup-in-sequence", "--steps-on-host"}},
      {"Output", {"--metrics-out", "--timeline-out", "--save-model", "--predict-out", "--logits-out", "--embeddings-out",
                  "--embeddings-layer", "--outputs-from"}},
      {"Checkpoints and inference", {"--checkpoint", "--checkpoint-every", "--resume", "--load-model", "--predict-only"}},
  };
  for (const auto& [group, names] : groups)
    for (const char* name : names) app.get_option(name)->group(group);
}

// GPUs the CUDA executor can use (0 without one in this build).
int cuda_gpus_visible() {
#ifdef HT_HAVE_CUDA
  return ht::cuda_device_count();
#else
  return 0;
#endif
}

// Options that do nothing in the chosen configuration are refused (not
// warned about): a typo or a misunderstanding should not cost a run.
void refuse_unused_options(const CLI::App& app, const Context& ctx, const ht::TrainJob& job) {
  auto given = [&](const char* name) { return app.count(name) > 0; };
  auto refuse = [&](const char* name, const std::string& why) {
    if (given(name)) throw ht::usage_error(name, why);
  };
  ht::tools::refuse_other_models_options(app, ctx.model);
  if (ctx.optimizer == ht::OptimizerKind::adam) refuse("--momentum", "applies to --optimizer sgd only");
  if (ctx.layers != "auto") refuse("--hidden", "applies to --layers auto only (--layers gives every width)");
  if (!job.partition_path.empty()) refuse("--chunks", "applies when partitioning in memory; the partition file sets n");
  if (ctx.backend == ht::Backend::cpu && job.chunks != ht::kChunksAuto)
    refuse("--gpu-mem", "applies to --backend cuda, or to --chunks auto as the GPU memory to choose for");
  if (job.checkpoint_path.empty()) refuse("--checkpoint-every", "needs --checkpoint FILE");
  if (job.trainer.overlap_pulls && job.trainer.keep_remote_rows == ht::KeepRemoteRows::on)
    refuse("--keep-remote-rows", "on does not combine with --overlap-pulls (one of the two)");
  if (job.save_model.empty() && job.predict_out.empty() && job.logits_out.empty() && job.embeddings_out.empty())
    refuse("--outputs-from", "applies to --save-model, --predict-out, --logits-out and --embeddings-out");
  if (job.embeddings_out.empty()) refuse("--embeddings-layer", "needs --embeddings-out FILE.npy");
  if (job.predict_only)
    for (const char* o : {"--epochs", "--eval-every", "--warmup", "--lr", "--weight-decay", "--momentum", "--dropout",
                          "--attn-dropout", "--optimizer", "--decay-first-layer-only", "--early-stop", "--target-acc",
                          "--runs", "--outputs-from"})
      refuse(o, "does not apply to --predict-only (no training)");
  if (job.store == ht::StoreChoice::device)
    refuse("--gpu-cache", "applies to a host vertex store (--store device keeps all of it on the GPU)");
  if (job.store == ht::StoreChoice::device && ctx.gpus > 1)
    throw ht::option_error("--store", "device needs one GPU (in-memory mode: m = 1, n = 1), not --gpus " +
                                          std::to_string(ctx.gpus));
  if (job.store == ht::StoreChoice::device && job.chunks != 1 && job.partition_path.empty())
    throw ht::option_error("--store", "device needs one chunk (in-memory mode: m = 1, n = 1), not --chunks " +
                                          ctx.chunks);
}

#ifdef HT_HAVE_CUDA
// The first of the node's GPUs this process takes: GPU 0 when it sees only
// its own (srun --gpus-per-task), else its share by its rank on the node.
int first_gpu_of(const ht::dist::LaunchInfo& launch, int gpus, int visible) {
  if (launch.size == 1 || visible == gpus) return 0;
  if ((launch.local_rank + 1) * gpus <= visible) return launch.local_rank * gpus;
  throw ht::option_error("--gpus", fmt::format("process {} ({} on its node, of {}) needs {} GPU(s) but sees {}: "
                                               "give each process its own GPUs (srun --gpus-per-task) or start "
                                               "fewer processes per node",
                                               launch.rank, launch.local_rank, launch.local_size, gpus, visible));
}
#endif

// Several processes on a node share its cores. A launcher may bind each to
// one core (Open MPI does for 2 processes): the host's share of the work
// (gradient additions, feature reads, OpenMP loops) then runs on that core
// alone, several times slower; said once, with the fix.
void check_cores(const ht::dist::LaunchInfo& launch, int rank) {
  if (launch.size <= 1) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  const int allowed = CPU_COUNT(&set);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (allowed >= 4 || allowed >= online) return;
  ht::log::warn("process {} may run on {} of the node's {} cores: its host work runs there alone; launch with "
                "mpirun --bind-to none (or --map-by socket), or srun --cpus-per-task, and OMP_NUM_THREADS = the "
                "cores per process",
                rank, allowed, online);
}

// Several processes: an error in one ends the whole job at once, with that
// process's one line (the others would wait for it forever).
void run_as_job(ht::Transport* transport, const std::function<void()>& body) {
  if (!transport) return body();
  try {
    body();
  } catch (const ht::signals::Interrupted& e) {
    // Every process stops after the same epoch (train_job.cpp); process 0
    // says so for the job, the others end with the exit code alone.
    if (transport->rank() > 0) throw ht::signals::Interrupted(e.signal(), "");
    throw;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ht-train: error (process {} of {}): {}\n", transport->rank(), transport->size(), e.what());
    std::fflush(stderr);
    transport->abort(1);
  }
}

// Every option of the command line with its value, for the metrics file:
// as given, else its default ("" for an option without one); flags "true"
// when given, else "false". Enum options are recorded from the parsed values
// by name (CLI11 keeps their validated numbers; --backend auto as resolved).
std::vector<std::pair<std::string, std::string>> recorded_options(const CLI::App& app, const Context& ctx) {
  const ht::TrainJob& job = ctx.job;
  const std::map<std::string, std::string> enums{
      {"--model", ht::name_of(ctx.model)},
      {"--optimizer", ht::name_of(ctx.optimizer)},
      {"--backend", ht::name_of(ctx.backend)},
      {"--spmm", ht::name_of(job.spmm)},
      {"--comm", ht::name_in(ht::comm_mode_names(), job.trainer.comm)},
      {"--gcn-order", ht::name_in(ht::gcn_order_names(), job.trainer.gcn_order)},
      {"--store", ht::name_in(ht::store_choice_names(), job.store)},
      {"--host-dtype", std::string(ht::dtype_name(job.trainer.host_dtype))},
      {"--outputs-from", ht::name_in(ht::outputs_from_names(), job.outputs_from)},
      {"--steps", job.trainer.steps == ht::StepPlacement::streamed   ? "stream"
                  : job.trainer.steps == ht::StepPlacement::resident ? "resident"
                                                                     : "auto"}};
  std::vector<std::pair<std::string, std::string>> out;
  for (const CLI::Option* o : app.get_options()) {
    std::string name = o->get_name(false, true);  // the long name, "--lr" ("--no-bias{false}" for a negated flag)
    name = name.substr(0, name.find('{'));
    if (name.rfind("--", 0) != 0 || name == "--help" || name == "--version") continue;
    std::string value;
    if (const auto e = enums.find(name); e != enums.end()) {
      value = e->second;
    } else if (o->get_expected_min() == 0) {
      value = o->count() > 0 ? "true" : "false";
    } else if (o->count() > 0) {
      for (const std::string& r : o->results()) value += (value.empty() ? "" : " ") + r;
    } else {
      value = o->get_default_str();
    }
    out.emplace_back(name, value);
  }
  return out;
}

// "stopped after 57 of 200 epochs (early stop (patience 20)); best epoch 37 reached 4.21 s after the start
// of training, 6.02 s after the start of the process; target 0.8 at epoch 30, 3.40 s (5.21 s)".
std::string time_line(const ht::TrainSummary& s, double target_acc) {
  std::string line = s.epochs < s.epochs_planned
                          ? fmt::format("stopped after {} of {} epochs ({})", s.epochs, s.epochs_planned, s.stop_reason)
                          : fmt::format("trained {} epochs", s.epochs);
  line += fmt::format("; best epoch {} reached {:.2f} s after the start of training, {:.2f} s after the start of the "
                      "process",
                      s.best_epoch, s.best_time.train_seconds, s.best_time.process_seconds);
  if (target_acc >= 0) {
    if (s.target_time.epoch >= 0)
      line += fmt::format("; target {} at epoch {}, {:.2f} s ({:.2f} s)", target_acc, s.target_time.epoch,
                          s.target_time.train_seconds, s.target_time.process_seconds);
    else line += fmt::format("; target {} not reached", target_acc);
  }
  if (!s.outputs_from.empty()) line += "; outputs from the " + s.outputs_from;
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Trains GCN, GAT or GraphSAGE full-graph on one or more GPUs (or the CPU reference executor), streaming "
               "chunks of the graph through device memory with deduplicated communication.",
               "ht-train"};
  Context ctx;
  ht::TrainJob& job = ctx.job;
  ht::cli::setup_app(app, ctx.common);
  app.add_option("-g,--graph", job.graph_path, "Graph file (.htg, from ht-convert)")->required()->check(CLI::ExistingFile);
  app.add_option("-p,--partition", job.partition_path, "Partition file (.htp, from ht-partition); default: partition in memory")
      ->check(CLI::ExistingFile);
  app.add_option("--plan", job.plan_path, "Plan file (.htplan, from ht-reorganize); default: build in memory")
      ->check(CLI::ExistingFile);
  ht::cli::add_enum(app, "--model", ctx.model, ht::model_kind_names(), "Model");
  app.add_option("--layers", ctx.layers, "Layer widths, e.g. 1433-16-7 (GAT: hidden widths per head); auto = F-hidden-C");
  app.add_option("--hidden", ctx.hidden, "Hidden width for --layers auto (default 16 for GCN and SAGE, 8 for GAT)")
      ->check(ht::cli::in_range(1, 1 << 20));
  app.add_option("--heads", job.trainer.model.heads, "GAT heads in hidden layers (concatenated)")
      ->check(ht::cli::in_range(1, 1024));
  app.add_option("--out-heads", job.trainer.model.out_heads, "GAT heads in the output layer (averaged)")
      ->check(ht::cli::in_range(1, 1024));
  app.add_option("--dropout", job.trainer.model.dropout, "Dropout rate on every layer's input")
      ->check(ht::cli::fraction());
  app.add_option("--attn-dropout", job.trainer.model.attn_dropout, "GAT dropout rate on attention coefficients")
      ->check(ht::cli::fraction());
  app.add_flag("!--no-bias", job.trainer.model.bias, "Layers without bias");
  ht::cli::add_enum(app, "--optimizer", ctx.optimizer, ht::optimizer_kind_names(), "Optimizer");
  app.add_option("--lr", job.trainer.optimizer.lr, "Learning rate")->check(ht::cli::in_range(1e-12, 1e3));
  app.add_option("--weight-decay", job.trainer.optimizer.weight_decay, "L2 weight decay added to the gradients")
      ->check(ht::cli::in_range(0, 1e3));
  app.add_flag("--decay-first-layer-only", job.trainer.optimizer.decay_first_layer_only,
               "Apply weight decay to the first layer only (Kipf & Welling)");
  app.add_option("--momentum", job.trainer.optimizer.momentum, "SGD momentum")->check(ht::cli::fraction());
  app.add_option("--epochs", job.epochs, "Training epochs")->check(ht::cli::in_range(1, 1e9));
  app.add_option("--eval-every", job.eval_every, "Evaluate (train/val/test accuracy) every k epochs")
      ->check(ht::cli::in_range(1, 1e9));
  app.add_option("--warmup", job.warmup, "Epochs left out of the median epoch time")->check(ht::cli::in_range(0, 1e9));
  app.add_option("--seed", job.trainer.model.seed, "Seed of weight initialization and dropout masks")
      ->check(ht::cli::unsigned_integer());
  app.add_option("--early-stop", job.early_stop,
                 "Stop when the validation accuracy has not improved for this many evaluations (0 = off); "
                 "checkpoints keep the count")
      ->check(ht::cli::in_range(0, 1e9))
      ->capture_default_str();
  app.add_option("--target-acc", job.target_acc,
                 "Stop at the first evaluation whose validation accuracy reaches this fraction (e.g. 0.78); the "
                 "summary gives the time to it. Default: off")
      ->check(ht::cli::in_range(0, 1));
  app.add_option("--time-limit", job.time_limit,
                 "Stop after the first evaluation at which this many seconds of training have passed (0 = off): a "
                 "wall-clock cap that still writes the summary, the metrics and the outputs of the best epoch")
      ->check(ht::cli::in_range(0, 1e9))
      ->capture_default_str();
  app.add_option("--runs", ctx.runs,
                 "Train this many times with seeds --seed, --seed + 1, ...: per-run lines, and the mean ± standard "
                 "deviation of the test accuracy at the best validation epoch and of the time to it (OGB's report). "
                 "Not with --save-model, --predict-out, --logits-out, --checkpoint, --resume, --timeline-out")
      ->check(ht::cli::in_range(1, 10000))
      ->capture_default_str();
  ht::cli::add_enum(app, "--backend", ctx.backend, ht::backend_names(),
                    "Executor: cuda, cpu (the reference executor, emulates GPUs; slow), or auto = cuda when this "
                    "build has the CUDA executor and a GPU is visible, else cpu (the choice is logged)");
  ht::cli::add_enum(app, "--spmm", job.spmm, ht::spmm_backend_names(),
                    "Sparse products on the GPU (GCN's aggregation and its transpose, GAT's weighted aggregation): "
                    "own (the project's kernels), cusparse (cusparseSpMM, its deterministic CSR algorithm), or auto "
                    "= the faster per product (for now own everywhere: not yet measured). Results equal up to float "
                    "rounding. The cpu backend ignores it");
  app.add_option("--gpus", ctx.gpus, "GPUs (emulated devices for cpu); default: the plan's m, or 1")
      ->check(ht::cli::in_range(1, 4096));
  app.add_option("--chunks", ctx.chunks,
                 "Chunks per GPU when partitioning in memory, or auto: the fewest whose GPU working set (what the "
                 "memory check before training counts) plus a GPU cache tier (the features' rows, when that is at "
                 "most 1/8 of the budget; --gpu-cache SIZE: SIZE) fits the budget: --gpu-mem, else the free memory "
                 "of the GPUs (cuda); on the CPU backend give --gpu-mem, else auto is 1. The choice and why are "
                 "logged")
      ->check(ht::tools::chunks_value())
      ->capture_default_str();
  ht::cli::add_enum(app, "--comm", job.trainer.comm, ht::comm_mode_names(),
                    "Communication: baseline (every chunk loads its neighbors), p2p (+inter-GPU dedup), full (+reuse)");
  ht::cli::add_enum(app, "--gcn-order", job.trainer.gcn_order, ht::gcn_order_names(),
                    "GCN layer order: aggregate (Â x, then W) or transform (x W, then Â: moves and aggregates the "
                    "output width); auto = transform where the output is narrower than the input");
  app.add_flag("!--no-overlap", job.trainer.overlap_copies,
               "Copy layer outputs to host in line with compute instead of behind the next batch (saves one set "
               "of output buffers per GPU; results are the same)");
  ht::cli::add_enum(app, "--steps", job.trainer.steps,
                    {{"auto", ht::StepPlacement::automatic},
                     {"stream", ht::StepPlacement::streamed},
                     {"resident", ht::StepPlacement::resident}},
                    "Chunk topologies on the GPU: resident (copied once), stream (two in flight, copied with each "
                    "batch: GPU memory shrinks with the chunk count, more host-link traffic), auto = resident when "
                    "they fit under --gpu-mem or the free memory");
  app.add_option("--merged-buffers", job.trainer.merged_buffers,
                 "Merged data buffers per GPU: 2 lets a gathering pass load while the previous one computes "
                 "(one more buffer of GPU memory, used only when it fits)")
      ->check(ht::cli::in_range(1, 2))
      ->capture_default_str();
  app.add_flag("!--no-early-start", job.trainer.early_start,
               "Every pass waits for the previous one to end (a barrier) instead of for the batches it reads");
  app.add_flag("!--no-fuse-transforms", job.trainer.fuse_transforms,
               "GCN: run a transform-first layer's vertex-wise passes (t = x W and its backward) as passes of "
               "their own instead of inside the previous layer's batches (results are identical with fp32 "
               "stores; the fused default moves fewer rows)");
  app.add_flag("!--no-gradient-handoff", job.trainer.handoff_gradients,
               "Send layer 1's input gradients through the host store to layer 0's backward, instead of keeping "
               "on the GPU the rows the plan allows (results are identical with fp32 stores)");
  app.add_flag("!--no-device-forwarding", job.trainer.forward_on_device,
               "Let each layer's first batch gather its rows from the host store, instead of the previous layer's "
               "batches writing them into its merged buffer on the GPU (needs --merged-buffers 2 and --comm p2p "
               "or full; results are identical with fp32 stores)");
  app.add_flag("!--no-gpu-accumulate", job.trainer.gpu_accumulate,
               "16-bit stores: keep the gradient matrices out of the GPU cache (every return rounded and added on "
               "the host: the bits of earlier versions) instead of holding them in the cache as fp32 accumulators (fp32 stores: "
               "no effect)");
  app.add_flag("--store-pages-first", job.store_pages_first,
               "Fault the host vertex store's pages in with every core before the device plans' steps (only its "
               "pinning beside them), instead of all of the store beside the steps. On friendster-like (4 GPUs) neither order was clearly "
               "faster: a fresh virtual machine's first touch of its memory dominated both (bench/RESULTS.md, session "
               "14); the setup summary's system CPU seconds per phase say which is faster on a machine; results are "
               "the same");
  app.add_flag("!--steps-on-host", job.trainer.derive_steps,
               "Write every list of the resident device-plan steps on the host and copy them whole, instead of "
               "packing their offsets and index lists, copying their sources from the plan and letting each GPU derive the rest (edge "
               "destinations, self-loop rows, weights, keys, the transpose: about 12 bytes per edge of a step's "
               "working memory for a moment at setup); results are identical; the setup line's \"derived on the "
               "devices\" part is the GPUs' time");
  app.add_flag("--setup-in-sequence", job.setup_in_sequence,
               "Run setup's phases one after another, as before issue 33: the host link probe and the executor's "
               "start (CUDA contexts, library handles) go beside the files' reading by default; the setup line says "
               "what ran beside what. Results are the same");
  app.add_flag("!--no-tier-returns", job.trainer.tier_returns,
               "Send every gradient return to the host, instead of letting the GPU cache's row tier of t^l (a "
               "transform-first GCN layer's gathered matrix) take the returns of ∇t^l into its rows on the GPU "
               "(results are identical)");
  ht::cli::add_enum(app, "--keep-remote-rows", job.trainer.keep_remote_rows,
                    {{"auto", ht::KeepRemoteRows::automatic},
                     {"on", ht::KeepRemoteRows::on},
                     {"off", ht::KeepRemoteRows::off}},
                    "Several GPUs, --comm full with read-ahead: a row of another GPU that a batch read in the previous "
                    "batch too is copied on the GPU from where that batch had it (a second remote area in the merged and "
                    "gradient buffers) instead of crossing NVLink again; results are identical; the summary's peer and "
                    "reused bytes show the difference; in a job of several processes their owners send only the other "
                    "rows. auto = on (GCN: 2-11% faster epochs on 2 and 4 H100s; GAT: -1.8 to +0.3% on 2 H200s; "
                    "20-53% fewer peer bytes); --overlap-pulls takes its place");
  app.add_flag("--overlap-pulls", job.trainer.overlap_pulls,
               "Move a batch's rows between GPUs while the previous batch computes (each GPU packs the rows its peers "
               "read and copies them on the copy engines), instead of pulling them on the compute queue after the "
               "previous batch; needs --comm full with read-ahead and a second remote area in the merged and gradient "
               "buffers; results are identical. Measured: faster for GCN on 2 GPUs, slower for GAT and for 4 GPUs "
               "with much peer traffic (bench/RESULTS.md)");
  ht::cli::add_enum(app, "--store", job.store, ht::store_choice_names(),
                    "Vertex store: host (pinned), device (in-memory mode: m = 1, n = 1), auto = device when it fits");
  ht::cli::add_enum(app, "--host-dtype", job.trainer.host_dtype, ht::store_dtype_names(),
                    "Element type of the host vertex store (features, layer outputs, cached aggregates, gradients): "
                    "bf16 or fp16 halve host memory and host-link bytes; compute stays fp32 (rows are widened and "
                    "rounded to nearest even in the copy kernels). fp16 refuses features beyond ±65504. Host stores "
                    "only (with a 16-bit dtype --store auto keeps the store on the host)");
  app.add_option("--peer-timeout", ctx.peer_timeout,
                 "Several processes (mpirun, srun): a process that waits longer than this many seconds for the "
                 "others in one exchange ends the job with one line naming the wait (a stopped, hung or lost process "
                 "would otherwise leave the others waiting forever); 0 = wait forever")
      ->check(ht::cli::in_range(0, 1e9))
      ->capture_default_str();
  app.add_option("--gpu-mem", ctx.gpu_mem,
                 "Cap on GPU memory per device, a size like 80G or 40GiB (a bare number is GiB; cuda; 0 = all free "
                 "memory); with --chunks auto, the memory to choose the chunk count for (also on the CPU backend)")
      ->capture_default_str();
  app.add_option("--gpu-cache", ctx.gpu_cache,
                 "GPU cache: vertex-store matrices kept in GPU memory instead of crossing the host link, taken by "
                 "the host-link and host-add bytes each saves per byte of GPU memory, each that fits: the input "
                 "features, cached aggregates, hidden layer outputs and the gradients (fp32 accumulators, also with "
                 "a 16-bit store; see --no-gpu-accumulate). Each GPU holds its partition's rows; --comm baseline: "
                 "the features only, whole. What is left holds the rows loaded most often of the next gathered "
                 "matrix (row tier). auto = what the working set leaves (cuda; cpu: off), off, or a budget in GiB "
                 "per GPU. Results are identical with an fp32 store")
      ->capture_default_str();
  app.add_option("--host-mem", ctx.host_mem,
                 "Host memory the run may use: a size like 96G, 512MiB (binary units; a bare number is GiB, as "
                 "--gpu-mem), or auto/0 = what /proc/meminfo's MemAvailable and the process's cgroups leave. A run "
                 "whose host memory plan needs more stops before loading, naming the options that would fit")
      ->capture_default_str();
  app.add_flag("--normalize-features", job.normalize_features, "Row-normalize features to sum 1 (Kipf & Welling)");
  app.add_option("--metrics-out", job.metrics_out, "JSON lines: one object per epoch and a final summary");
  app.add_option("--timeline-out", job.timeline_out,
                 "JSON: every device queue's busy intervals (ms) in the last training epoch, to see what overlaps");
  app.add_option("--save-model", job.save_model,
                 "Write the parameters (of the epoch --outputs-from picks) to this model file (not a training "
                 "checkpoint: see --checkpoint): FILE.npz = NumPy arrays per layer (docs/FORMATS.md), any other name "
                 "= the HTMODEL container (--load-model reads it)");
  app.add_option("--load-model", job.load_model, "Start from this model file (--save-model's HTMODEL)")->check(CLI::ExistingFile);
  app.add_option("--predict-out", job.predict_out, "Write predictions (CSV id,prediction; original vertex ids)");
  app.add_option("--logits-out", job.logits_out,
                 "Write the logits as .npy [N, C] f4 (rows in graph file order), of the epoch --outputs-from picks");
  app.add_option("--embeddings-out", job.embeddings_out,
                 "Write layer --embeddings-layer's output h^l as .npy [N, width] f4 (rows in graph file order), of "
                 "the epoch --outputs-from picks (or of --predict-only's forward)");
  app.add_option("--embeddings-layer", job.embeddings_layer,
                 "Layer whose output --embeddings-out writes: 1 = the first hidden layer's (after its activation), "
                 "L = the logits")
      ->check(ht::cli::in_range(1, 1 << 20))
      ->capture_default_str();
  ht::cli::add_enum(app, "--outputs-from", job.outputs_from, ht::outputs_from_names(),
                    "Parameters of --save-model, --predict-out, --logits-out and --embeddings-out: best = the best validation epoch "
                    "(whose test accuracy the summary reports; one more forward at the end), last = the last epoch "
                    "trained");
  app.add_option("--checkpoint", job.checkpoint_path,
                 "Training checkpoint (parameters, optimizer state, epoch, metrics so far), written atomically every "
                 "--checkpoint-every epochs, at the end and on SIGINT/SIGTERM");
  app.add_option("--checkpoint-every", job.checkpoint_every, "Epochs between checkpoints")
      ->check(ht::cli::in_range(1, 1e9));
  app.add_option("--resume", job.resume_path,
                 "Continue from this checkpoint (same graph, partition, plan and model); may equal --checkpoint")
      ->check(CLI::ExistingFile);
  app.add_flag("--predict-only", job.predict_only,
               "No training: one forward with --load-model (or --resume) parameters, writes --predict-out / "
               "--logits-out and prints the accuracy per split");
  app.add_flag("!--no-verify", job.verify_checksums, "Skip section checksums (structural checks still run)");

  group_options(app);
  std::unique_ptr<ht::Transport> transport;  // several processes (mpirun, srun): outlives the job
  return ht::cli::run(app, ctx.common, argc, argv, [&] {
    const ht::dist::LaunchInfo launch = ht::dist::detect_launch();
    transport = ht::dist::connect_processes(launch, ctx.peer_timeout);
    if (transport) {
      job.transport = transport.get();
      check_cores(launch, transport->rank());
      if (transport->rank() > 0 && ctx.common.verbose == 0) ht::log::set_level(ht::log::Level::warn);
      ht::log::info("{}: this is process {} of {}", transport->describe(), transport->rank(), transport->size());
    }
    run_as_job(transport.get(), [&] {
    const bool automatic = ctx.backend == ht::Backend::automatic;
    const int visible = automatic ? cuda_gpus_visible() : 0;
    if (automatic) ctx.backend = visible > 0 ? ht::Backend::cuda : ht::Backend::cpu;
#ifndef HT_HAVE_CUDA
    if (ctx.backend == ht::Backend::cuda)
      throw ht::option_error("--backend", "this build has no CUDA executor (nvcc and the CUDA libraries were not "
                                          "found when it was configured); use --backend cpu");
#else
    // Asked before the link probe, whose first CUDA call would otherwise say
    // "CUDA error 35 ... cudaGetDevice" on a machine without a driver.
    if (ctx.backend == ht::Backend::cuda && !automatic && cuda_gpus_visible() == 0)
      throw ht::option_error("--backend", "cuda: no CUDA GPU is visible; use --backend cpu");
#endif
    job.chunks = ht::tools::chunk_count(ctx.chunks);
    refuse_unused_options(app, ctx, job);
    if (automatic)  // said once the options are known to be valid
      ht::log::info("--backend auto: {} ({})", ht::name_of(ctx.backend),
                    visible > 0 ? fmt::format("{} GPU(s) visible", visible)
                                : "no GPU visible, or this build has no CUDA executor");
    ht::signals::install("ht-train", true);
    job.stop_requested = [] { return ht::signals::stop_signal(); };
    job.trainer.model.kind = ctx.model;
    job.trainer.optimizer.kind = ctx.optimizer;
    job.backend = ctx.backend;
    job.trainer.model.dims = ht::tools::parse_layers(ctx.layers);
    job.trainer.gpu_cache = ht::tools::parse_gpu_cache(ctx.gpu_cache);
    // Sizes as --host-mem and ht-partition's --gpu-mem take them (80G, 40GiB, 512M).
    const std::optional<int64_t> gpu_mem = ht::parse_memory_size(ctx.gpu_mem);
    if (!gpu_mem || *gpu_mem > (int64_t{1} << 50))
      throw ht::option_error("--gpu-mem", fmt::format("'{}' is not 0 or a size like 80G or 40GiB (at most 1 PiB)",
                                                      ctx.gpu_mem));
    job.gpu_mem_bytes = *gpu_mem;
    job.hidden = ctx.hidden;
    const std::optional<int64_t> host_mem = ht::parse_memory_size(ctx.host_mem);
    if (!host_mem)
      throw ht::option_error("--host-mem", fmt::format("'{}' is not auto, 0 or a size like 96G or 512MiB", ctx.host_mem));
    job.host_mem_bytes = *host_mem;
    // Asked only when a run does not fit (it starts the CUDA driver).
    job.cuda_available = [] { return cuda_gpus_visible() > 0; };
    const int processes = transport ? transport->size() : 1;
    job.parts = (ctx.gpus > 0 ? ctx.gpus : 1) * processes;
    if (!job.plan_path.empty() && job.partition_path.empty())
      throw ht::option_error("--plan", "needs --partition (the partition the plan was made from)");
    ht::ExecutorFactory factory = [&](int m) -> std::unique_ptr<ht::Executor> {
      // m: this process's share of the plan's GPUs.
      if (processes > 1 && m != (ctx.gpus > 0 ? ctx.gpus : 1))
        throw ht::option_error("--gpus", fmt::format("the partition's m = {} over {} processes is {} GPU(s) each, not {}",
                                                     m * processes, processes, m, ctx.gpus > 0 ? ctx.gpus : 1));
      if (ctx.gpus > 0 && ctx.gpus != m)
        throw ht::option_error("--gpus", fmt::format("the plan is for {} GPUs, not {}", m, ctx.gpus));
      if (ctx.backend == ht::Backend::cpu) return std::make_unique<ht::CpuExecutor>(m);
#ifdef HT_HAVE_CUDA
      return ht::make_cuda_executor(m, job.gpu_mem_bytes, first_gpu_of(launch, m, cuda_gpus_visible()), job.spmm);
#else
      throw ht::option_error("--backend", "this build has no CUDA executor (nvcc and the CUDA libraries were not "
                                          "found when it was configured); use --backend cpu");
#endif
    };
#ifdef HT_HAVE_CUDA
    // GPU 0's link stands for every GPU's (the lent machines give each GPU
    // the same kind of host link).
    if (ctx.backend == ht::Backend::cuda) job.probe_link = [] { return ht::measure_link_bandwidth(0); };
    if (ctx.backend == ht::Backend::cuda) job.device_memory = [](int m) { return ht::cuda_usable_memory(m); };
#endif
    job.options = recorded_options(app, ctx);
    const ht::RunsSummary runs = ht::run_train_runs(job, ctx.runs, factory);
    const ht::TrainSummary& s = runs.runs.back();
    if (transport && transport->rank() > 0) return;  // process 0 prints the job's summary
    if (s.predicted_only) {
      if (s.has_labels)
        fmt::print("accuracy: train {:.4f}, validation {:.4f}, test {:.4f}\n", s.final_train_acc, s.final_val_acc,
                   s.final_test_acc);
      else
        fmt::print("predictions written; the graph has no labels (no accuracy)\n");
      return;
    }
    if (ctx.runs > 1) {
      for (const ht::TrainSummary& r : runs.runs) fmt::print("{}\n", ht::run_line(r));
      fmt::print("{}\n", ht::runs_line(runs));
      fmt::print("the lines below are the last run's\n");
    }
    fmt::print("best validation accuracy {:.4f} at epoch {}; test accuracy there {:.4f}\n", s.best_val_acc,
               s.best_epoch, s.test_acc_at_best_val);
    fmt::print("{}\n", time_line(s, job.target_acc));
    fmt::print("median epoch {:.2f} ms (busy: h2d {:.2f}, d2d {:.2f}, compute {:.2f}, cpu {:.2f}) over epochs after {} warm-up\n",
               s.epoch_ms_median, s.h2d_ms_median, s.d2d_ms_median, s.compute_ms_median, s.cpu_ms_median, s.warmup_used);
    fmt::print("{}\n", ht::exposed_line(s.exposed_ms_median, s.epoch_ms_median));
    if (const std::string busy = ht::gpu_busy_line(s.gpu_busy_max_ms_median, s.gpu_busy_mean_ms_median, s.gpus / s.processes); !busy.empty())
      fmt::print("{}\n", busy);
    fmt::print("{}\n", ht::eval_line(s.eval_ms_median, s.evaluations_timed));
    const std::string early =
        s.per_epoch.p2p_early_rows > 0
            ? fmt::format(" ({:.0f}% of its rows pulled while the batch before computed)",
                          100.0 * static_cast<double>(s.per_epoch.p2p_early_rows) /
                              static_cast<double>(std::max<int64_t>(s.per_epoch.p2p_rows, 1)))
            : std::string();
    fmt::print("per epoch: host->device {}, device->host {}, peer {}{}, reused in place {}\n",
               ht::format_bytes(static_cast<double>(s.per_epoch.h2d_bytes)),
               ht::format_bytes(static_cast<double>(s.per_epoch.d2h_bytes)),
               ht::format_bytes(static_cast<double>(s.per_epoch.p2p_bytes)), early,
               ht::format_bytes(static_cast<double>(s.per_epoch.reuse_bytes)));
    if (const std::string cache = ht::cache_line(s.per_epoch, s.gpu_cache_bytes, s.gpu_cache_what); !cache.empty()) fmt::print("{}\n", cache);
    fmt::print("memory: peak per device {}, host vertex buffers {} ({}), peak process RSS {}{}\n",
               ht::format_bytes(static_cast<double>(s.peak_device_bytes)),
               ht::format_bytes(static_cast<double>(s.host_buffer_bytes)), ht::dtype_name(s.host_dtype),
               ht::format_bytes(static_cast<double>(s.peak_rss_bytes)),
               s.processes > 1 ? fmt::format(" (the largest of {} processes)", s.processes) : "");
    fmt::print("{}\n", ht::host_memory_line(s.host_plan, s.peak_rss_bytes, s.host_limit));
    fmt::print("{}\n", ht::link_bound_line(s.link_measured ? &s.link : nullptr, s.link_bound, s.gpus));
    if (s.link_measured && !ht::phase_bound_line(s.link_phase_bound).empty())
      fmt::print("{}\n", ht::phase_bound_line(s.link_phase_bound));
    fmt::print("{}\n", ht::setup_line(s.setup_seconds, s.epoch_ms_median));
    });
  });
}
