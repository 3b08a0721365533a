#pragma once
// HT_MPI_TRY: throw ht::Error naming the MPI call, MPI's message, file and
// line when a call fails (the style of HT_CUDA_TRY in cuda/cuda_check.hpp).
// MpiTransport sets MPI_ERRORS_RETURN on MPI_COMM_WORLD, so that failures
// come back as codes instead of MPI's default of ending the job silently.
// Only the MPI build compiles this (lib/dist/mpi_*: see lib/CMakeLists.txt).
#include <mpi.h>

#include <string>

namespace ht::dist {
// "MPI_ERR_TRUNCATE: message truncated"
std::string mpi_error_string(int code);
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
}  // namespace ht::dist

#define HT_MPI_TRY(call)                                                                  \
  do {                                                                                    \
    const int ht_mpi_rc_ = (call);                                                        \
    if (ht_mpi_rc_ != MPI_SUCCESS) ::ht::dist::throw_mpi_error(ht_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
