// The summary arithmetic of ht-train (lib/train/metrics): medians, the
// exposed-time split and the link-bound lower bound of an epoch, and the
// summary lines made from them.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "train/metrics.hpp"

namespace ht {
namespace {

TEST(Median, OddEvenEmpty) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({}), 0);
}

TEST(Exposed, MillisecondsFromAnEpoch) {
  EpochResult r;
  r.x_compute = 0.010;
  r.x_h2d = 0.002;
  r.x_d2h = 0.001;
  r.x_host = 0.0005;
  r.x_idle = 0.0015;
  const ExposedTimes ms = exposed_ms(r);
  EXPECT_DOUBLE_EQ(ms.compute, 10);
  EXPECT_DOUBLE_EQ(ms.h2d, 2);
  EXPECT_DOUBLE_EQ(ms.d2h, 1);
  EXPECT_DOUBLE_EQ(ms.host, 0.5);
  EXPECT_DOUBLE_EQ(ms.idle, 1.5);
  EXPECT_DOUBLE_EQ(ms.sum(), 15);
}

TEST(Exposed, MedianPerField) {
  // Each field's median comes from a different epoch: fields are not tied.
  const std::vector<ExposedTimes> epochs = {
      {10, 1, 0, 0, 9}, {30, 3, 1, 0, 1}, {20, 2, 5, 1, 5}};
  const ExposedTimes m = median_exposed(epochs);
  EXPECT_DOUBLE_EQ(m.compute, 20);
  EXPECT_DOUBLE_EQ(m.h2d, 2);
  EXPECT_DOUBLE_EQ(m.d2h, 1);
  EXPECT_DOUBLE_EQ(m.host, 0);
  EXPECT_DOUBLE_EQ(m.idle, 5);
  const ExposedTimes none = median_exposed({});
  EXPECT_DOUBLE_EQ(none.sum(), 0);
}

TEST(LinkBound, SlowerDirectionBounds) {
  LinkCounters c;
  c.h2d_bytes = 50'000'000'000;  // 1 s at 50 GB/s
  c.d2h_bytes = 10'000'000'000;  // 0.4 s at 25 GB/s
  const LinkBandwidth bw{50e9, 25e9};
  const LinkBound b = link_lower_bound(c, bw, 1, 2.0);
  EXPECT_DOUBLE_EQ(b.seconds, 1.0);
  EXPECT_DOUBLE_EQ(b.ratio, 2.0);
  c.d2h_bytes = 40'000'000'000;  // now 1.6 s: D2H bounds
  EXPECT_DOUBLE_EQ(link_lower_bound(c, bw, 1, 2.0).seconds, 1.6);
}

TEST(LinkBound, EachGpuHasItsOwnLink) {
  LinkCounters c;
  c.h2d_bytes = 40'000'000'000;  // all GPUs together
  const LinkBound b = link_lower_bound(c, {40e9, 40e9}, 4, 0.5);
  EXPECT_DOUBLE_EQ(b.seconds, 0.25);
  EXPECT_DOUBLE_EQ(b.ratio, 2.0);
}

TEST(LinkBound, NoHostTrafficHasNoRatio) {
  const LinkBound b = link_lower_bound(LinkCounters{}, {50e9, 50e9}, 1, 0.1);
  EXPECT_EQ(b.seconds, 0);
  EXPECT_EQ(b.ratio, 0);
  EXPECT_NE(link_bound_line(nullptr, b, 1).find("not measured"), std::string::npos);
  const LinkBandwidth bw{50e9, 50e9};
  EXPECT_NE(link_bound_line(&bw, b, 1).find("no host traffic"), std::string::npos);
}

TEST(LinkBound, RejectsUnmeasuredBandwidth) {
  LinkCounters c;
  c.h2d_bytes = 1;
  EXPECT_THROW(link_lower_bound(c, LinkBandwidth{}, 1, 1.0), Error);
  EXPECT_THROW(link_lower_bound(c, {1e9, 1e9}, 0, 1.0), Error);
}

// Each phase (forward passes, then backward passes) takes its larger
// direction: forward writing 8 and reading 2, backward the reverse, is 8 + 8
// against the epoch's max(10, 10); never below link_lower_bound, equal to it
// when one phase moves everything.
TEST(LinkBound, PhasesTakeTheirLargerDirection) {
  LinkCounters c;
  c.h2d_bytes = 10'000'000'000;
  c.d2h_bytes = 10'000'000'000;
  const LinkBandwidth bw{1e9, 1e9};
  PhaseLinkBound b = link_phase_bound(c, 2'000'000'000, 8'000'000'000, bw, 1, 32.0);
  EXPECT_DOUBLE_EQ(b.forward_seconds, 8.0);
  EXPECT_DOUBLE_EQ(b.backward_seconds, 8.0);
  EXPECT_DOUBLE_EQ(b.total.seconds, 16.0);
  EXPECT_DOUBLE_EQ(b.total.ratio, 2.0);
  EXPECT_DOUBLE_EQ(link_lower_bound(c, bw, 1, 32.0).seconds, 10.0);
  b = link_phase_bound(c, 2'000'000'000, 8'000'000'000, bw, 2, 32.0);  // two GPUs, a link each
  EXPECT_DOUBLE_EQ(b.total.seconds, 8.0);
  b = link_phase_bound(c, 10'000'000'000, 10'000'000'000, bw, 1, 32.0);  // all in the forward
  EXPECT_DOUBLE_EQ(b.total.seconds, link_lower_bound(c, bw, 1, 32.0).seconds);
  rng::Stream r(3, 0);
  for (int k = 0; k < 200; ++k) {
    c.h2d_bytes = static_cast<int64_t>(r.below(1'000'000));
    c.d2h_bytes = static_cast<int64_t>(r.below(1'000'000));
    const int64_t fh = static_cast<int64_t>(r.below(static_cast<uint64_t>(c.h2d_bytes) + 1));
    const int64_t fd = static_cast<int64_t>(r.below(static_cast<uint64_t>(c.d2h_bytes) + 1));
    const LinkBandwidth bw2{1e9 + static_cast<double>(r.below(1000)) * 1e6, 1e9};
    EXPECT_GE(link_phase_bound(c, fh, fd, bw2, 1, 1.0).total.seconds, link_lower_bound(c, bw2, 1, 1.0).seconds * (1 - 1e-12));
  }
  EXPECT_THROW(link_phase_bound(c, c.h2d_bytes + 1, 0, bw, 1, 1.0), Error);
  EXPECT_EQ(phase_bound_line(link_phase_bound(LinkCounters{}, 0, 0, bw, 1, 1.0)), "");
  c.h2d_bytes = 3'000'000;
  c.d2h_bytes = 2'000'000;
  EXPECT_EQ(phase_bound_line(link_phase_bound(c, 1'000'000, 2'000'000, bw, 1, 0.008)),
            "link bound with the forward before the backward: 4.00 ms per epoch (forward passes 2.00 ms, backward "
            "passes 2.00 ms, each its larger direction); median epoch = 2.00x this bound");
}

TEST(SummaryLines, Text) {
  EXPECT_EQ(exposed_line({6, 2, 1, 0.5, 0.5}, 20),
            "exposed: compute 6.00 ms, h2d 2.00, d2h 1.00, host 0.50, idle 0.50 (sum 50.0% of epoch)");
  LinkCounters c;
  c.h2d_bytes = 110'000'000;  // 2 ms at 55 GB/s
  const LinkBandwidth bw{55e9, 50e9};
  EXPECT_EQ(link_bound_line(&bw, link_lower_bound(c, bw, 2, 0.004), 2),
            "link-bound lower bound: 1.00 ms per epoch (H2D 55.0 GB/s, D2H 50.0 GB/s measured on GPU 0, 2 GPUs "
            "with a link each); median epoch = 4.00x the bound");
  EXPECT_EQ(eval_line(12.5, 1), "evaluation: median 12.50 ms over 1 evaluation after warm-up (not in the epoch time)");
  EXPECT_EQ(setup_line(3.0, 150), "setup 3.00 s = 20.0 median epochs");
  EXPECT_EQ(setup_line(3.0, 0), "setup 3.00 s");
}

// The GPU cache's share of the store's row transfers: rows served on the GPU
// against rows over the link both ways.
TEST(SummaryLines, CacheHitFraction) {
  LinkCounters c;
  EXPECT_EQ(cache_hit_fraction(c), 0.0);
  EXPECT_EQ(cache_line(c), "");
  c.h2d_rows = 100;
  c.d2h_rows = 50;
  EXPECT_EQ(cache_hit_fraction(c), 0.0);
  c.cache_rows = 850;
  c.cache_bytes = int64_t{3} << 30;
  EXPECT_DOUBLE_EQ(cache_hit_fraction(c), 0.85);
  EXPECT_EQ(cache_line(c),
            "GPU cache: 3.00 GiB per epoch read or written on the GPU instead of over the host link (850 rows, 85.0% "
            "of the vertex store's row transfers)");
  EXPECT_EQ(cache_line(c, int64_t{5} << 30, "h^0; tier of h^1"),
            "GPU cache (holds h^0; tier of h^1: 5.00 GiB on the fullest GPU): 3.00 GiB per epoch read or written on "
            "the GPU instead of over the host link (850 rows, 85.0% of the vertex store's row transfers)");
}

}  // namespace
}  // namespace ht
