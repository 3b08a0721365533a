// The MPI transport (lib/dist/mpi_transport.*) between real processes:
// started by ctest as `mpirun -np 2` and `-np 4` (tests/CMakeLists.txt).
// Every process runs every test in the same order, as the trainer does; the
// job passes when every process passed. Most tests use pieces of 1000 bytes,
// so that messages of a few KB cover the splitting meant for 1 GiB.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "dist/connect.hpp"
#include "dist/launch.hpp"
#include "dist/mpi_transport.hpp"

namespace ht::dist {
namespace {

MpiTransport* g_world = nullptr;  // main's: MPI starts once per process
constexpr int64_t kPiece = 1000;

// A byte of message (src, dst, tag, index) at position i: every message's
// content differs from every other's.
std::byte pattern(int src, int dst, int tag, int index, int64_t i) {
  return static_cast<std::byte>((src * 131 + dst * 31 + tag * 17 + index * 7 + i * 13 + i / 256) & 0xff);
}

std::vector<std::byte> make(int src, int dst, int tag, int index, int64_t n) {
  std::vector<std::byte> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = pattern(src, dst, tag, index, i);
  return v;
}

// First position where `got` is not message (src, dst, tag, index), or -1.
int64_t mismatch(const std::vector<std::byte>& got, int src, int dst, int tag, int index) {
  for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i)
    if (got[static_cast<size_t>(i)] != pattern(src, dst, tag, index, i)) return i;
  return -1;
}

std::span<std::byte> bytes(std::vector<std::byte>& v) { return {v.data(), v.size()}; }

// Message (src, dst, tag, index) bytes: 0, below, at and above a piece.
int64_t size_of(int src, int dst, int tag, int index) {
  const int64_t sizes[] = {0, 1, 999, 1000, 1001, 2500, 3000, 64};
  return sizes[(src * 5 + dst * 3 + tag + index) % 8];
}

TEST(DistMpi, WorldMatchesTheLauncher) {
  MpiTransport& t = *g_world;
  const LaunchInfo l = detect_launch();
  EXPECT_EQ(t.rank(), l.rank);
  EXPECT_EQ(t.size(), l.size);
  EXPECT_GE(t.size(), 2);
  EXPECT_EQ(t.piece_bytes(), int64_t{1} << 30);
  EXPECT_GE(t.tag_upper_bound(), 32767);
  const std::string d = t.describe();
  EXPECT_TRUE(d.starts_with("MPI (")) << d;
  EXPECT_TRUE(d.ends_with(fmt::format(", {} processes)", t.size()))) << d;
  EXPECT_EQ(d.find('\n'), std::string::npos) << d;
  // A second transport attaches to the running MPI (no second start).
  auto connected = connect_processes(l);
  ASSERT_NE(connected, nullptr);
  EXPECT_EQ(connected->rank(), l.rank);
  EXPECT_EQ(connected->size(), l.size);
}

TEST(DistMpi, ShortLibraryVersion) {
  EXPECT_EQ(short_library_version("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4"),
            "Open MPI v4.1.4");
  EXPECT_EQ(short_library_version("MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7"), "MPICH Version: 4.0.2");
  EXPECT_EQ(short_library_version("  Intel(R) MPI Library 2021.6  \n"), "Intel(R) MPI Library 2021.6");
  EXPECT_EQ(short_library_version(""), "unknown MPI");
}

TEST(DistMpi, LauncherDisagreeingWithMpiFails) {
  LaunchInfo l = detect_launch();
  l.size += 1;
  try {
    connect_processes(l);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("but {} started it as process {} of {}", l.launcher, l.rank,
                                                     l.size)),
              std::string::npos)
        << e.what();
  }
}

// Each process sends to the next and receives from the previous, with three
// tags, all in one exchange; pieces of the default size and of 1000 bytes.
TEST(DistMpi, ExchangeRing) {
  for (const int64_t piece : {MpiTransport::kDefaultPieceBytes, kPiece}) {
    MpiTransport t(piece);
    const int r = t.rank(), p = t.size(), next = (r + 1) % p, prev = (r + p - 1) % p;
    const int tags[] = {0, 1, 7};
    std::vector<std::vector<std::byte>> out, in;
    std::vector<TransportMessage> sends, recvs;
    for (const int tag : tags) {
      out.push_back(make(r, next, tag, 0, 100 + 1700 * tag));
      in.emplace_back(static_cast<size_t>(100 + 1700 * tag));
    }
    for (size_t k = 0; k < out.size(); ++k) {
      sends.push_back({next, tags[k], bytes(out[k])});
      recvs.push_back({prev, tags[k], bytes(in[k])});
    }
    t.exchange(sends, recvs);
    for (size_t k = 0; k < in.size(); ++k)
      EXPECT_EQ(mismatch(in[k], prev, r, tags[k], 0), -1) << "piece " << piece << " tag " << tags[k];
  }
}

// Every process sends to every process (itself too) three messages of three
// tags: empty ones, ones below, at and above a piece.
TEST(DistMpi, ExchangeAllToAll) {
  MpiTransport t(kPiece);
  const int r = t.rank(), p = t.size();
  std::vector<std::vector<std::byte>> out, in;
  std::vector<TransportMessage> sends, recvs;
  out.reserve(static_cast<size_t>(p) * 3);
  in.reserve(static_cast<size_t>(p) * 3);
  for (int peer = 0; peer < p; ++peer) {
    for (int tag = 0; tag < 3; ++tag) {
      out.push_back(make(r, peer, tag, 0, size_of(r, peer, tag, 0)));
      sends.push_back({peer, tag, bytes(out.back())});
      in.emplace_back(static_cast<size_t>(size_of(peer, r, tag, 0)));
      recvs.push_back({peer, tag, bytes(in.back())});
    }
  }
  t.exchange(sends, recvs);
  for (int peer = 0, k = 0; peer < p; ++peer)
    for (int tag = 0; tag < 3; ++tag, ++k)
      EXPECT_EQ(mismatch(in[static_cast<size_t>(k)], peer, r, tag, 0), -1) << "from " << peer << " tag " << tag;
}

// Messages between two processes with the same tag arrive in the order sent,
// each cut into pieces (1 to 4), the sends listed before or after the others.
TEST(DistMpi, ExchangeSameTagKeepsOrder) {
  MpiTransport t(kPiece);
  const int r = t.rank(), p = t.size();
  constexpr int kCount = 6, kTag = 5;
  std::vector<std::vector<std::byte>> out, in;
  std::vector<TransportMessage> sends, recvs;
  out.reserve(static_cast<size_t>(p) * kCount);
  in.reserve(static_cast<size_t>(p) * kCount);
  for (int peer = 0; peer < p; ++peer) {
    if (peer == r) continue;
    for (int index = 0; index < kCount; ++index) {
      out.push_back(make(r, peer, kTag, index, size_of(r, peer, kTag, index)));
      sends.push_back({peer, kTag, bytes(out.back())});
      in.emplace_back(static_cast<size_t>(size_of(peer, r, kTag, index)));
      recvs.push_back({peer, kTag, bytes(in.back())});
    }
  }
  t.exchange(sends, recvs);
  size_t k = 0;
  for (int peer = 0; peer < p; ++peer) {
    if (peer == r) continue;
    for (int index = 0; index < kCount; ++index, ++k)
      EXPECT_EQ(mismatch(in[k], peer, r, kTag, index), -1) << "from " << peer << " message " << index;
  }
}

TEST(DistMpi, ExchangeNothingAndEmptyMessages) {
  MpiTransport t(kPiece);
  t.exchange({}, {});
  const int r = t.rank(), p = t.size();
  std::vector<TransportMessage> sends, recvs;
  for (int peer = 0; peer < p; ++peer) {
    sends.push_back({peer, 3, {}});
    recvs.push_back({peer, 3, {}});
  }
  t.exchange(sends, recvs);
  // One empty and one full message with the same tag: the empty one still
  // takes its turn.
  std::vector<std::byte> full = make(r, (r + 1) % p, 4, 1, 1500), got(1500), none;
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  std::vector<TransportMessage> s2 = {{next, 4, {}}, {next, 4, bytes(full)}};
  std::vector<TransportMessage> r2 = {{prev, 4, bytes(none)}, {prev, 4, bytes(got)}};
  t.exchange(s2, r2);
  EXPECT_EQ(mismatch(got, prev, r, 4, 1), -1);
}

TEST(DistMpi, ExchangeErrors) {
  MpiTransport t(kPiece);
  const int r = t.rank();
  std::vector<std::byte> a(10), b(20);
  const auto message = [&](std::vector<TransportMessage> sends, std::vector<TransportMessage> recvs) -> std::string {
    try {
      t.exchange(sends, recvs);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  // Checked before anything is posted.
  std::string e = message({{r, -1, bytes(a)}}, {});
  EXPECT_NE(e.find(fmt::format("MPI message tag -1 (to rank {}) is not in [0, MPI_TAG_UB = {}]", r,
                               t.tag_upper_bound())),
            std::string::npos)
      << e;
  e = message({}, {{t.size(), 0, bytes(a)}});
  EXPECT_NE(e.find(fmt::format("MPI receive from rank {} is not a process of this job", t.size())), std::string::npos)
      << e;
  // A message shorter than the receive (to itself: no other process is
  // involved).
  e = message({{r, 9, bytes(a)}}, {{r, 9, bytes(b)}});
  EXPECT_EQ(e, fmt::format("MPI receive from rank {} with tag 9 (20 bytes at byte 0 of 20): 10 bytes arrived; the "
                           "processes disagree on the message's size",
                           r));
  // A longer one, around the ring: refused before it is received, and never
  // written past the buffer (Open MPI wrote it there: heap corruption when
  // processes were given different widths). The bytes after the 10 the
  // receive expects are a guard that must stay as it was.
  const int p = t.size(), next = (r + 1) % p, prev = (r + p - 1) % p;
  std::vector<std::byte> longer(30, std::byte{7}), guarded(30, std::byte{0xee});
  e = message({{next, 11, bytes(longer)}}, {{prev, 11, {guarded.data(), 10}}});
  EXPECT_EQ(e, fmt::format("MPI receive from rank {} with tag 11 (10 bytes at byte 0 of 10): 30 bytes arrived; the "
                           "processes disagree on the message's size",
                           prev));
  for (size_t i = 10; i < guarded.size(); ++i) EXPECT_EQ(guarded[i], std::byte{0xee}) << "byte " << i;
  t.barrier();  // nothing of it is left in flight: the next exchange and collectives match as usual
  EXPECT_THROW(MpiTransport(0), Error);
  EXPECT_THROW(MpiTransport(int64_t{1} << 31), Error);
}

TEST(DistMpi, Allgather) {
  for (const int64_t piece : {MpiTransport::kDefaultPieceBytes, kPiece}) {
    MpiTransport t(piece);
    const int r = t.rank(), p = t.size();
    for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{2500}}) {
      std::vector<std::byte> mine = make(r, 0, 0, 0, n), all(static_cast<size_t>(n * p), std::byte{0xee});
      t.allgather(mine, bytes(all));
      for (int src = 0; src < p; ++src) {
        std::vector<std::byte> part(all.begin() + src * n, all.begin() + (src + 1) * n);
        EXPECT_EQ(mismatch(part, src, 0, 0, 0), -1) << "piece " << piece << ", " << n << " bytes from " << src;
      }
    }
    std::vector<std::byte> mine(4), wrong(4 * static_cast<size_t>(p) + 1);
    EXPECT_THROW(t.allgather(mine, bytes(wrong)), Error);
    // Processes that disagree on the size (process 0 gives 4 bytes, the
    // others 8): every one refuses before anything is gathered.
    std::vector<std::byte> own(r == 0 ? 4 : 8), every(own.size() * static_cast<size_t>(p));
    std::string e;
    try {
      t.allgather(own, bytes(every));
    } catch (const Error& x) {
      e = x.what();
    }
    EXPECT_EQ(e, "MPI allgather: process 1 gives 8 bytes and process 0 4; the processes disagree on the size");
  }
  // The typed helper.
  MpiTransport& t = *g_world;
  const int64_t mine[2] = {t.rank(), int64_t{1} << 40};
  std::vector<int64_t> all(2 * static_cast<size_t>(t.size()));
  allgather_values<int64_t>(t, mine, all);
  for (int src = 0; src < t.size(); ++src) {
    EXPECT_EQ(all[2 * static_cast<size_t>(src)], src);
    EXPECT_EQ(all[2 * static_cast<size_t>(src) + 1], int64_t{1} << 40);
  }
}

TEST(DistMpi, Broadcast) {
  MpiTransport t(kPiece);
  for (int root = 0; root < t.size(); ++root) {
    for (const int64_t n : {int64_t{0}, int64_t{10}, int64_t{1000}, int64_t{2500}}) {
      std::vector<std::byte> v = t.rank() == root ? make(root, 1, 2, 3, n) : std::vector<std::byte>(n);
      t.broadcast(bytes(v), root);
      EXPECT_EQ(mismatch(v, root, 1, 2, 3), -1) << "root " << root << ", " << n << " bytes";
    }
  }
  std::vector<std::byte> v(1);
  EXPECT_THROW(t.broadcast(bytes(v), t.size()), Error);
  // A root that sends more than the others expect: refused by them, nothing
  // written past their buffers (the root itself returns).
  std::vector<std::byte> w(t.rank() == 0 ? 20 : 10);
  std::string e;
  try {
    t.broadcast(bytes(w), 0);
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_EQ(e, t.rank() == 0 ? "" : fmt::format("MPI broadcast: process 0 (the root) sends 20 bytes but process {} "
                                                "expects 10", t.rank()));
}

// Nobody leaves the barrier before the last one enters it.
TEST(DistMpi, Barrier) {
  MpiTransport& t = *g_world;
  t.barrier();
  const auto start = std::chrono::steady_clock::now();
  if (t.rank() == t.size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  t.barrier();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(250));
}

// Beyond 2^31 bytes with the default 1 GiB pieces: a message each way
// between neighbours, then an allgather. About 6 GiB per process, so only on
// request: HT_TEST_MPI_LARGE=1 mpirun -np 2 test_dist_mpi --gtest_filter=*Large*
TEST(DistMpi, LargeMessages) {
  if (!std::getenv("HT_TEST_MPI_LARGE")) GTEST_SKIP() << "set HT_TEST_MPI_LARGE=1 (about 6 GiB per process)";
  MpiTransport& t = *g_world;
  const int r = t.rank(), p = t.size(), next = (r + 1) % p, prev = (r + p - 1) % p;
  const int64_t n = (int64_t{1} << 31) + 4099;  // three pieces: 1 GiB, 1 GiB, 4099 bytes
  {
    std::vector<std::byte> out = make(r, next, 1, 0, n), in(static_cast<size_t>(n));
    const TransportMessage send{next, 1, bytes(out)}, recv{prev, 1, bytes(in)};
    t.exchange({&send, 1}, {&recv, 1});
    EXPECT_EQ(mismatch(in, prev, r, 1, 0), -1);
  }
  std::vector<std::byte> mine = make(r, 0, 2, 0, n), all(static_cast<size_t>(n * p));
  t.allgather(mine, bytes(all));
  mine = {};
  for (int src = 0; src < p; ++src) {
    std::vector<std::byte> part(all.begin() + src * n, all.begin() + (src + 1) * n);
    EXPECT_EQ(mismatch(part, src, 0, 2, 0), -1) << "from " << src;
  }
}

// Processes other than 0 print only failures, each line with its rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      fmt::print(stderr, "[rank {}] {}:{}: Failure\n{}\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      fmt::print(stderr, "[rank {}] FAILED {}.{}\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace ht::dist

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    ht::dist::MpiTransport world;
    ht::dist::g_world = &world;
    if (world.rank() != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new ht::dist::FailurePrinter(world.rank()));
    }
    const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    // Every process exits with the job's result.
    std::vector<int> all(static_cast<size_t>(world.size()));
    ht::allgather_values<int>(world, std::span<const int>(&failed, 1), all);
    const int failing = std::accumulate(all.begin(), all.end(), 0);
    if (world.rank() == 0 && failing > 0) fmt::print(stderr, "test_dist_mpi: {} process(es) failed\n", failing);
    return failing > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "test_dist_mpi: {}\n", e.what());
    return 1;
  }
}
