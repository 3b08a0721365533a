#pragma once
// --metrics-out: JSON lines, one object per epoch ("type": "epoch") and a
// final summary ("type": "summary"). Written through an atomic file: the
// file appears (renamed into place) only when the run completes.
// Also the arithmetic of the summary that is worth testing on its own:
// medians, the exposed-time split and the link-bound lower bound.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "core/json.hpp"
#include "engine/executor.hpp"
#include "engine/link_bandwidth.hpp"
#include "engine/trainer.hpp"

namespace ht {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& path);  // empty path: disabled
  void write(const JsonWriter& object);
  // Lines written before (a resumed run's metrics so far), as they were.
  void write_text(const std::string& lines);
  void commit();
  // Everything written so far (kept also when disabled: checkpoints hold it).
  const std::string& text() const { return text_; }

 private:
  std::unique_ptr<AtomicFile> file_;
  std::string text_;
};

// Median (mean of the two middle values for an even count); 0 for none.
double median_of(std::vector<double> v);

// An epoch's wall time split by what was exposed (EpochResult::x_*); the unit
// is the caller's (the summary keeps milliseconds).
struct ExposedTimes {
  double compute = 0, h2d = 0, d2h = 0, host = 0, idle = 0;
  double sum() const { return compute + h2d + d2h + host + idle; }
};

ExposedTimes exposed_ms(const EpochResult& r);
// Each field's median on its own (so the medians need not add up to the
// median epoch; the summary line says how close they come).
ExposedTimes median_exposed(std::span<const ExposedTimes> epochs);

// Lower bound of an epoch's time set by the host links alone: every byte
// counted per epoch has to cross a host link, H2D and D2H in parallel.
struct LinkBound {
  double seconds = 0;  // 0 when the epoch moves nothing over the host link
  double ratio = 0;    // median epoch / seconds; 0 when seconds is 0
};

// `per_epoch` sums the bytes of all `num_gpus` GPUs, each with its own link of
// the measured bandwidth `bw` (the probe measures one GPU's).
LinkBound link_lower_bound(const LinkCounters& per_epoch, const LinkBandwidth& bw, int num_gpus,
                           double epoch_seconds);

// The bound of a schedule that runs the forward passes before the backward
// passes: each phase moves its own bytes, both directions in parallel, so it
// takes its larger direction's time. Forward passes mostly write (outputs,
// cached aggregates), backward passes mostly read them back, so this is up
// to twice link_lower_bound's. `forward_*` are the forward passes' share of
// `per_epoch` (all GPUs).
struct PhaseLinkBound {
  double forward_seconds = 0, backward_seconds = 0;
  LinkBound total;  // their sum, and median epoch over it
};
PhaseLinkBound link_phase_bound(const LinkCounters& per_epoch, int64_t forward_h2d_bytes, int64_t forward_d2h_bytes,
                                const LinkBandwidth& bw, int num_gpus, double epoch_seconds);

// The summary lines of ht-train for the above (no trailing newline).
// `epoch_ms` = median epoch; `link` null = not measured (CPU backend).
std::string exposed_line(const ExposedTimes& ms, double epoch_ms);
// "per-GPU compute busy: slowest ..., mean ..." (balance over the GPUs), or
// empty when there is nothing to compare (one GPU of this process, or no timeline).
std::string gpu_busy_line(double slowest_ms, double mean_ms, int gpus);
std::string link_bound_line(const LinkBandwidth* link, const LinkBound& bound, int num_gpus);
// "" when the epoch moves nothing over the link.
std::string phase_bound_line(const PhaseLinkBound& b);
std::string eval_line(double eval_ms_median, int evaluations);
std::string setup_line(double setup_seconds, double epoch_ms);
// Of the vertex-store rows a training epoch reads or writes (host link plus
// GPU cache), the fraction the GPU cache served: 0 without a cache.
double cache_hit_fraction(const LinkCounters& c);
// "GPU cache: 9.74 GiB per epoch read or written on the GPU instead of over
// the host link (41.2 M rows, 85.0% of the store's row transfers)"; empty
// when the cache served nothing.
std::string cache_line(const LinkCounters& c, int64_t held_bytes = 0, const std::string& held = {});

}  // namespace ht
