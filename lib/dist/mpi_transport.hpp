#pragma once
// The job's processes over MPI (engine/transport.hpp): point-to-point
// messages, allgather, broadcast, barrier and abort on MPI_COMM_WORLD.
// The header needs no <mpi.h>, so that ht-train compiles without MPI's
// include path; the class exists only in a build with MPI (HT_HAVE_MPI).
//
// Messages and collectives are cut into pieces of at most `piece_bytes`
// (1 GiB): MPI counts are int, and rows of a large graph exceed 2^31 bytes.
// A message's pieces go with the same tag in order, and MPI does not let
// messages of one source, tag and communicator overtake each other.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "dist/peer_watchdog.hpp"
#include "engine/transport.hpp"

namespace ht::dist {

class MpiTransport final : public Transport {
 public:
  static constexpr int64_t kDefaultPieceBytes = int64_t{1} << 30;

  // Starts MPI (MPI_Init_thread, MPI_THREAD_FUNNELED: one thread of the
  // process calls MPI) unless something else did; `piece_bytes` in
  // [1, 2^31 - 1] (tests use small pieces to cover the splitting). A call
  // that waits for the other processes longer than `peer_timeout_s` (> 0)
  // ends this process with one line (PeerWatchdog): the launcher then ends
  // the job instead of every process waiting for a stopped one forever.
  explicit MpiTransport(int64_t piece_bytes = kDefaultPieceBytes, double peer_timeout_s = 0);
  // MPI_Finalize when this object started MPI; skipped while an exception
  // unwinds: MPI_Finalize waits for every process, and the others may be
  // waiting for this one. The process then exits without it and the launcher
  // ends the job (the caller should still print its error and call abort()).
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void exchange(std::span<const TransportMessage> sends, std::span<const TransportMessage> recvs) override;
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all) override;
  void broadcast(std::span<std::byte> bytes, int root) override;
  void barrier() override;
  [[noreturn]] void abort(int code) override;
  // "MPI (Open MPI v4.1.4, 2 processes)"
  std::string describe() const override;

  int64_t piece_bytes() const { return piece_bytes_; }
  // The largest tag this MPI allows (MPI_TAG_UB, at least 32767).
  int tag_upper_bound() const { return tag_ub_; }

 private:
  int64_t piece_bytes_;
  bool started_mpi_ = false;
  int rank_ = 0, size_ = 1, tag_ub_ = 32767;
  std::string library_;  // "Open MPI v4.1.4"
  std::unique_ptr<PeerWatchdog> watchdog_;
};

// The first line of MPI_Get_library_version's text up to its first comma,
// blanks collapsed: "Open MPI v4.1.4", "MPICH Version: 4.1" (exposed for tests).
std::string short_library_version(std::string_view text);

}  // namespace ht::dist
