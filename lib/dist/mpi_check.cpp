#include "dist/mpi_check.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht::dist {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "unknown MPI error";
  return std::string(text, static_cast<size_t>(len));
}

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  throw Error(fmt::format("MPI error {} ({}) in {} at {}:{}", code, mpi_error_string(code), call, file, line));
}

}  // namespace ht::dist
