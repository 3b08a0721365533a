#include "train/metrics.hpp"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory.hpp"

namespace ht {

MetricsWriter::MetricsWriter(const std::string& path) {
  if (!path.empty()) file_ = std::make_unique<AtomicFile>(path);
}

void MetricsWriter::write(const JsonWriter& object) { write_text(object.str() + "\n"); }

void MetricsWriter::write_text(const std::string& lines) {
  text_ += lines;
  if (file_) file_->write(lines.data(), lines.size());
}

void MetricsWriter::commit() {
  if (file_) file_->commit();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

ExposedTimes exposed_ms(const EpochResult& r) {
  return {r.x_compute * 1e3, r.x_h2d * 1e3, r.x_d2h * 1e3, r.x_host * 1e3, r.x_idle * 1e3};
}

ExposedTimes median_exposed(std::span<const ExposedTimes> epochs) {
  auto med = [&](double ExposedTimes::*field) {
    std::vector<double> v;
    v.reserve(epochs.size());
    for (const ExposedTimes& e : epochs) v.push_back(e.*field);
    return median_of(std::move(v));
  };
  return {med(&ExposedTimes::compute), med(&ExposedTimes::h2d), med(&ExposedTimes::d2h), med(&ExposedTimes::host),
          med(&ExposedTimes::idle)};
}

LinkBound link_lower_bound(const LinkCounters& per_epoch, const LinkBandwidth& bw, int num_gpus,
                           double epoch_seconds) {
  HT_CHECK(bw.h2d_bytes_per_s > 0 && bw.d2h_bytes_per_s > 0,
           "link bound: bandwidths must be > 0, got H2D {} and D2H {} bytes/s", bw.h2d_bytes_per_s,
           bw.d2h_bytes_per_s);
  HT_CHECK(num_gpus >= 1, "link bound: number of GPUs must be >= 1, got {}", num_gpus);
  // The counters add up all GPUs and each GPU has its own link, so the links
  // together move num_gpus times one link's rate. Even spread is the best
  // case: a GPU with more than its share only makes the epoch longer, so this
  // stays a lower bound.
  const double h2d = static_cast<double>(per_epoch.h2d_bytes) / bw.h2d_bytes_per_s;
  const double d2h = static_cast<double>(per_epoch.d2h_bytes) / bw.d2h_bytes_per_s;
  LinkBound b;
  b.seconds = std::max(h2d, d2h) / num_gpus;
  b.ratio = b.seconds > 0 ? epoch_seconds / b.seconds : 0;
  return b;
}

PhaseLinkBound link_phase_bound(const LinkCounters& per_epoch, int64_t forward_h2d_bytes, int64_t forward_d2h_bytes,
                                const LinkBandwidth& bw, int num_gpus, double epoch_seconds) {
  HT_CHECK(forward_h2d_bytes >= 0 && forward_h2d_bytes <= per_epoch.h2d_bytes && forward_d2h_bytes >= 0 &&
               forward_d2h_bytes <= per_epoch.d2h_bytes,
           "link bound: the forward passes' bytes (H2D {}, D2H {}) exceed the epoch's (H2D {}, D2H {})",
           forward_h2d_bytes, forward_d2h_bytes, per_epoch.h2d_bytes, per_epoch.d2h_bytes);
  LinkCounters forward, backward;
  forward.h2d_bytes = forward_h2d_bytes;
  forward.d2h_bytes = forward_d2h_bytes;
  backward.h2d_bytes = per_epoch.h2d_bytes - forward_h2d_bytes;
  backward.d2h_bytes = per_epoch.d2h_bytes - forward_d2h_bytes;
  PhaseLinkBound b;
  b.forward_seconds = link_lower_bound(forward, bw, num_gpus, 0).seconds;
  b.backward_seconds = link_lower_bound(backward, bw, num_gpus, 0).seconds;
  b.total.seconds = b.forward_seconds + b.backward_seconds;
  b.total.ratio = b.total.seconds > 0 ? epoch_seconds / b.total.seconds : 0;
  return b;
}

std::string phase_bound_line(const PhaseLinkBound& b) {
  if (b.total.seconds <= 0) return "";
  return fmt::format("link bound with the forward before the backward: {:.2f} ms per epoch (forward passes {:.2f} ms, "
                     "backward passes {:.2f} ms, each its larger direction); median epoch = {:.2f}x this bound",
                     b.total.seconds * 1e3, b.forward_seconds * 1e3, b.backward_seconds * 1e3, b.total.ratio);
}

std::string gpu_busy_line(double slowest_ms, double mean_ms, int gpus) {
  if (gpus < 2 || mean_ms <= 0) return {};
  return fmt::format("per-GPU compute busy: slowest {:.2f} ms, mean {:.2f} ms (slowest {:.1f}% over the mean)", slowest_ms,
                     mean_ms, 100.0 * (slowest_ms / mean_ms - 1.0));
}

std::string exposed_line(const ExposedTimes& ms, double epoch_ms) {
  const std::string share =
      epoch_ms > 0 ? fmt::format("sum {:.1f}% of epoch", 100 * ms.sum() / epoch_ms) : fmt::format("sum {:.2f} ms", ms.sum());
  return fmt::format("exposed: compute {:.2f} ms, h2d {:.2f}, d2h {:.2f}, host {:.2f}, idle {:.2f} ({})", ms.compute,
                     ms.h2d, ms.d2h, ms.host, ms.idle, share);
}

std::string link_bound_line(const LinkBandwidth* link, const LinkBound& bound, int num_gpus) {
  if (!link) return "link-bound lower bound: not measured (no GPU host link on this backend)";
  const std::string rates =
      fmt::format("H2D {:.1f} GB/s, D2H {:.1f} GB/s measured on GPU 0{}", link->h2d_bytes_per_s / 1e9,
                  link->d2h_bytes_per_s / 1e9,
                  num_gpus > 1 ? fmt::format(", {} GPUs with a link each", num_gpus) : std::string());
  if (bound.seconds <= 0) return fmt::format("link-bound lower bound: none, no host traffic in an epoch ({})", rates);
  return fmt::format("link-bound lower bound: {:.2f} ms per epoch ({}); median epoch = {:.2f}x the bound",
                     bound.seconds * 1e3, rates, bound.ratio);
}

std::string eval_line(double eval_ms_median, int evaluations) {
  return fmt::format("evaluation: median {:.2f} ms over {} evaluation{} after warm-up (not in the epoch time)",
                     eval_ms_median, evaluations, evaluations == 1 ? "" : "s");
}

std::string setup_line(double setup_seconds, double epoch_ms) {
  if (epoch_ms <= 0) return fmt::format("setup {:.2f} s", setup_seconds);
  return fmt::format("setup {:.2f} s = {:.1f} median epochs", setup_seconds, setup_seconds * 1e3 / epoch_ms);
}

double cache_hit_fraction(const LinkCounters& c) {
  const int64_t all = c.cache_rows + c.h2d_rows + c.d2h_rows;
  return all > 0 ? static_cast<double>(c.cache_rows) / static_cast<double>(all) : 0.0;
}

std::string cache_line(const LinkCounters& c, int64_t held_bytes, const std::string& held) {
  if (c.cache_rows <= 0) return {};
  const std::string holds =
      held.empty() ? "" : fmt::format(" (holds {}: {} on the fullest GPU)", held, format_bytes(static_cast<double>(held_bytes)));
  return fmt::format("GPU cache{}: {} per epoch read or written on the GPU instead of over the host link ({} rows, "
                     "{:.1f}% of the vertex store's row transfers)",
                     holds, format_bytes(static_cast<double>(c.cache_bytes)), c.cache_rows, 100.0 * cache_hit_fraction(c));
}

}  // namespace ht
