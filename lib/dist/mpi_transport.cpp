#include "dist/mpi_transport.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "core/error.hpp"
#include "dist/mpi_check.hpp"

namespace ht::dist {
namespace {

// An empty message is one empty piece, so that each side still matches one
// message with the other (the sizes agree on both sides: every call is
// collective).
int64_t piece_count(int64_t bytes, int64_t piece) { return bytes == 0 ? 1 : (bytes + piece - 1) / piece; }

// A committed derived type, freed on scope exit (also when a call throws).
class TypeGuard {
 public:
  ~TypeGuard() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

// One posted piece of an exchange, for messages about a failed one.
struct Posted {
  const TransportMessage* message;
  bool receive;
  int64_t offset;
  int count;
};

}  // namespace

std::string short_library_version(std::string_view text) {
  text = text.substr(0, text.find_first_of("\n,"));
  std::string out;
  for (const char c : text) {
    const bool blank = c == ' ' || c == '\t' || c == '\r';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "unknown MPI" : out;
}

MpiTransport::MpiTransport(int64_t piece_bytes, double peer_timeout_s) : piece_bytes_(piece_bytes) {
  HT_CHECK(piece_bytes >= 1 && piece_bytes <= INT_MAX, "MPI piece size {} bytes is not in [1, {}]", piece_bytes,
           INT_MAX);
  int finalized = 0, initialized = 0, level = 0;
  HT_MPI_TRY(MPI_Finalized(&finalized));
  HT_CHECK(!finalized, "MPI was finalized already in this process: it cannot be started again");
  HT_MPI_TRY(MPI_Initialized(&initialized));
  if (!initialized) {
    HT_MPI_TRY(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &level));
    started_mpi_ = true;
  } else {
    HT_MPI_TRY(MPI_Query_thread(&level));
  }
  // From here a failure throws without MPI_Finalize (see the destructor):
  // the process exits and the launcher ends the job.
  HT_CHECK(level >= MPI_THREAD_FUNNELED,
           "MPI gives thread level {}, below MPI_THREAD_FUNNELED ({}): the trainer has other threads (OpenMP) "
           "besides the one that calls MPI",
           level, MPI_THREAD_FUNNELED);
  HT_MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  HT_MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  HT_MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  void* tag_ub = nullptr;
  int has_tag_ub = 0;
  HT_MPI_TRY(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &has_tag_ub));
  if (has_tag_ub && tag_ub) tag_ub_ = *static_cast<int*>(tag_ub);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  HT_MPI_TRY(MPI_Get_library_version(version, &len));
  library_ = short_library_version(std::string_view(version, static_cast<size_t>(len)));
  const int rank = rank_, size = size_;
  watchdog_ = std::make_unique<PeerWatchdog>(peer_timeout_s, [rank, size](const char* op, double waited) {
    std::fprintf(stderr,
                 "ht-train: error (process %d of %d): no answer from the other processes for %.0f s in %s: one of "
                 "them is stopped, hung or gone without ending the job; ending it (--peer-timeout sets the "
                 "limit)\n",
                 rank, size, waited, op);
    std::fflush(stderr);
    std::_Exit(1);  // the launcher ends the others (MPI_Abort is not for this thread: MPI_THREAD_FUNNELED)
  });
}

MpiTransport::~MpiTransport() {
  if (!started_mpi_ || std::uncaught_exceptions() > 0) return;
  int finalized = 0;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
}

void MpiTransport::exchange(std::span<const TransportMessage> sends, std::span<const TransportMessage> recvs) {
  const PeerWatchdog::Call watched(*watchdog_, "a message exchange");
  std::vector<MPI_Request> requests;
  std::vector<Posted> posted;
  // Every message is checked before any is posted: nothing is left in flight.
  const auto check = [&](const TransportMessage& m, bool receive) {
    HT_CHECK(m.rank >= 0 && m.rank < size_, "MPI {} rank {} is not a process of this job (0..{})",
             receive ? "receive from" : "send to", m.rank, size_ - 1);
    HT_CHECK(m.tag >= 0 && m.tag <= tag_ub_,
             "MPI message tag {} ({} rank {}) is not in [0, MPI_TAG_UB = {}] (this MPI's largest tag)", m.tag,
             receive ? "from" : "to", m.rank, tag_ub_);
  };
  for (const TransportMessage& m : recvs) check(m, true);
  for (const TransportMessage& m : sends) check(m, false);
  const auto which = [&](size_t i) {
    const Posted& p = posted[i];
    return fmt::format("{} rank {} with tag {} ({} bytes at byte {} of {})", p.receive ? "receive from" : "send to",
                       p.message->rank, p.message->tag, p.count, p.offset, p.message->bytes.size());
  };
  // Sends first, all at once; then each piece to receive is matched
  // (MPI_Mprobe) and its size compared with the buffer's before it is
  // received into it (MPI_Imrecv). A piece longer than the receive expects
  // must never reach the buffer: Open MPI 4.1 writes such a message past the
  // buffer over shared memory instead of reporting MPI_ERR_TRUNCATE (heap
  // corruption where processes disagreed on a width). Every process posts
  // its sends before it waits for a message, so the probes cannot deadlock.
  for (const TransportMessage& m : sends) {
    const auto bytes = static_cast<int64_t>(m.bytes.size());
    for (int64_t p = 0, n = piece_count(bytes, piece_bytes_); p < n; ++p) {
      const int64_t offset = p * piece_bytes_;
      const int count = static_cast<int>(std::min(piece_bytes_, bytes - offset));
      MPI_Request& r = requests.emplace_back(MPI_REQUEST_NULL);
      HT_MPI_TRY(MPI_Isend(m.bytes.data() + offset, count, MPI_BYTE, m.rank, m.tag, MPI_COMM_WORLD, &r));
      posted.push_back({&m, false, offset, count});
    }
  }
  for (const TransportMessage& m : recvs) {
    const auto bytes = static_cast<int64_t>(m.bytes.size());
    for (int64_t p = 0, n = piece_count(bytes, piece_bytes_); p < n; ++p) {
      const int64_t offset = p * piece_bytes_;
      const int count = static_cast<int>(std::min(piece_bytes_, bytes - offset));
      posted.push_back({&m, true, offset, count});
      MPI_Message message = MPI_MESSAGE_NULL;
      MPI_Status status;
      HT_MPI_TRY(MPI_Mprobe(m.rank, m.tag, MPI_COMM_WORLD, &message, &status));
      int got = 0;
      HT_MPI_TRY(MPI_Get_count(&status, MPI_BYTE, &got));
      if (got != count) {
        // The receives posted so far hold buffers that the caller frees
        // while the error unwinds: their messages have arrived (they were
        // probed), so they complete; wait for them first. The wrong piece
        // is drained aside, so that its sender completes too.
        for (size_t i = 0; i < requests.size(); ++i)
          if (posted[i].receive) MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
        std::vector<std::byte> aside(static_cast<size_t>(got));
        MPI_Mrecv(aside.data(), got, MPI_BYTE, &message, MPI_STATUS_IGNORE);
        throw Error(fmt::format("MPI {}: {} bytes arrived; the processes disagree on the message's size",
                                which(posted.size() - 1), got));
      }
      MPI_Request& r = requests.emplace_back(MPI_REQUEST_NULL);
      HT_MPI_TRY(MPI_Imrecv(m.bytes.data() + offset, count, MPI_BYTE, &message, &r));
    }
  }

  std::vector<MPI_Status> statuses(requests.size());
  const int rc = MPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
  if (rc == MPI_ERR_IN_STATUS) {
    for (size_t i = 0; i < statuses.size(); ++i) {
      const int e = statuses[i].MPI_ERROR;
      if (e != MPI_SUCCESS && e != MPI_ERR_PENDING)
        throw Error(fmt::format("MPI error {} ({}) in MPI_Waitall, {}", e, mpi_error_string(e), which(i)));
    }
  }
  if (rc != MPI_SUCCESS) throw_mpi_error(rc, "MPI_Waitall", __FILE__, __LINE__);
}

void MpiTransport::allgather(std::span<const std::byte> mine, std::span<std::byte> all) {
  const PeerWatchdog::Call watched(*watchdog_, "an allgather");
  const auto n = static_cast<int64_t>(mine.size());
  HT_CHECK(static_cast<int64_t>(all.size()) == n * size_,
           "MPI allgather: {} bytes to receive, but {} processes of {} bytes each make {}", all.size(), size_, n,
           n * size_);
  // Every process's size first (8 bytes from each, alike everywhere): a
  // process that gives more bytes than this one expects would otherwise be
  // written past `all`. Every process sees the same sizes and throws alike.
  std::vector<int64_t> sizes(static_cast<size_t>(size_));
  HT_MPI_TRY(MPI_Allgather(&n, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, MPI_COMM_WORLD));
  for (int r = 0; r < size_; ++r)
    HT_CHECK(sizes[static_cast<size_t>(r)] == sizes[0],
             "MPI allgather: process {} gives {} bytes and process 0 {}; the processes disagree on the size", r,
             sizes[static_cast<size_t>(r)], sizes[0]);
  if (n == 0) return;
  if (n <= piece_bytes_) {
    HT_MPI_TRY(MPI_Allgather(mine.data(), static_cast<int>(n), MPI_BYTE, all.data(), static_cast<int>(n), MPI_BYTE,
                             MPI_COMM_WORLD));
    return;
  }
  // Piece by piece: process r's piece at `offset` belongs at all[r * n +
  // offset]. One receive element of `len` bytes whose extent is n bytes
  // (MPI_Aint, 64-bit) puts each process's piece there.
  for (int64_t offset = 0; offset < n; offset += piece_bytes_) {
    const int len = static_cast<int>(std::min(piece_bytes_, n - offset));
    TypeGuard block, strided;
    HT_MPI_TRY(MPI_Type_contiguous(len, MPI_BYTE, &block.type));
    HT_MPI_TRY(MPI_Type_create_resized(block.type, 0, static_cast<MPI_Aint>(n), &strided.type));
    HT_MPI_TRY(MPI_Type_commit(&strided.type));
    HT_MPI_TRY(MPI_Allgather(mine.data() + offset, len, MPI_BYTE, all.data() + offset, 1, strided.type,
                             MPI_COMM_WORLD));
  }
}

void MpiTransport::broadcast(std::span<std::byte> bytes, int root) {
  const PeerWatchdog::Call watched(*watchdog_, "a broadcast");
  HT_CHECK(root >= 0 && root < size_, "MPI broadcast root {} is not a process of this job (0..{})", root, size_ - 1);
  const auto n = static_cast<int64_t>(bytes.size());
  // The root's size first: a longer broadcast than a process expects would be
  // written past its buffer.
  int64_t root_n = n;
  HT_MPI_TRY(MPI_Bcast(&root_n, 1, MPI_INT64_T, root, MPI_COMM_WORLD));
  HT_CHECK(root_n == n, "MPI broadcast: process {} (the root) sends {} bytes but process {} expects {}", root, root_n,
           rank_, n);
  for (int64_t offset = 0; offset < n; offset += piece_bytes_) {
    const int len = static_cast<int>(std::min(piece_bytes_, n - offset));
    HT_MPI_TRY(MPI_Bcast(bytes.data() + offset, len, MPI_BYTE, root, MPI_COMM_WORLD));
  }
}

void MpiTransport::barrier() {
  const PeerWatchdog::Call watched(*watchdog_, "a barrier");
  HT_MPI_TRY(MPI_Barrier(MPI_COMM_WORLD));
}

void MpiTransport::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] true if one did
}

std::string MpiTransport::describe() const {
  return fmt::format("MPI ({}, {} process{})", library_, size_, size_ == 1 ? "" : "es");
}

}  // namespace ht::dist
