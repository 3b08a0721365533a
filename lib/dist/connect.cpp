#include "dist/connect.hpp"

#include "core/error.hpp"
#ifdef HT_HAVE_MPI
#include "dist/mpi_transport.hpp"
#endif

namespace ht::dist {

bool built_with_mpi() {
#ifdef HT_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Transport> connect_processes(const LaunchInfo& launch, double peer_timeout_s) {
  if (launch.size <= 1) return nullptr;
#ifdef HT_HAVE_MPI
  auto transport = std::make_unique<MpiTransport>(MpiTransport::kDefaultPieceBytes, peer_timeout_s);
  // The environment and MPI could disagree when, say, a program built with
  // one MPI is started by another's launcher (each process then sees an MPI
  // job of one): stop instead of training as several disconnected jobs.
  HT_CHECK(transport->rank() == launch.rank && transport->size() == launch.size,
           "MPI says this is process {} of {}, but {} started it as process {} of {}: start ht-train with the "
           "launcher of the MPI it was built with ({})",
           transport->rank(), transport->size(), launch.launcher, launch.rank, launch.size, transport->describe());
  return transport;
#else
  (void)peer_timeout_s;
  throw Error(fmt::format("this ht-train was built without MPI, but {} started {} processes (this is process {}): "
                          "rebuild with libopenmpi-dev installed (`make deps`), or run one process",
                          launch.launcher.empty() ? "the launcher" : launch.launcher, launch.size, launch.rank));
#endif
}

}  // namespace ht::dist
