#pragma once
// Error type of the whole library: one exception class whose message says
// what went wrong and where (file, line or byte offset, option), so that each
// tool's main() can print it as a single actionable line.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace ht {

struct ErrorContext {
  std::string file;                  // input or output path involved, if any
  std::optional<int64_t> line;       // 1-based line of a text input
  std::optional<uint64_t> offset;    // byte offset in a binary input (unsigned: 2^63 and above print as such)
  std::string option;                // command-line option involved, if any
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorContext ctx = {});
  const ErrorContext& context() const noexcept { return ctx_; }
  const std::string& message() const noexcept { return message_; }

 private:
  static std::string compose(const std::string& message, const ErrorContext& ctx);
  std::string message_;
  ErrorContext ctx_;
};

// A command-line error found after parsing (a required option missing,
// options that exclude each other or do not apply): the tools exit with 2,
// as for an option CLI11 cannot parse (apps/cli).
class UsageError : public Error {
 public:
  using Error::Error;
};

// Factories for the common contexts.
Error file_error(const std::string& file, const std::string& message);
Error line_error(const std::string& file, int64_t line, const std::string& message);
Error offset_error(const std::string& file, uint64_t offset, const std::string& message);
Error option_error(const std::string& option, const std::string& message);
UsageError usage_error(const std::string& option, const std::string& message);

}  // namespace ht

// Throws ht::Error with a formatted message when `cond` is false.
#define HT_CHECK(cond, ...)                                  \
  do {                                                       \
    if (!(cond)) throw ::ht::Error(::fmt::format(__VA_ARGS__)); \
  } while (0)

// Internal invariant: a failure is a bug, reported with file and line.
#define HT_ASSERT(cond)                                                              \
  do {                                                                               \
    if (!(cond))                                                                     \
      throw ::ht::Error(::fmt::format("internal error: {} ({}:{})", #cond, __FILE__, \
                                      __LINE__));                                    \
  } while (0)
