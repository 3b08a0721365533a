#include "core/error.hpp"

namespace ht {
namespace {

// An error is printed as one line: NUL bytes (which would cut the C string
// what() returns), line breaks and other control bytes from inputs are shown
// escaped (\0, \n, \r, \xNN).
std::string one_line(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\0') out += "\\0";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (u < 0x20 && c != '\t') out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out;
}

}  // namespace

Error::Error(std::string message, ErrorContext ctx)
    : std::runtime_error(compose(message, ctx)), message_(std::move(message)), ctx_(std::move(ctx)) {}

std::string Error::compose(const std::string& message, const ErrorContext& ctx) {
  std::string where;
  if (!ctx.option.empty()) where = fmt::format("option {}", ctx.option);
  if (!ctx.file.empty()) {
    if (!where.empty()) where += ", ";
    where += ctx.file;
    if (ctx.line) where += fmt::format(":{}", *ctx.line);
    if (ctx.offset) where += fmt::format(" (byte {})", *ctx.offset);
  }
  return one_line(where.empty() ? message : fmt::format("{}: {}", where, message));
}

Error file_error(const std::string& file, const std::string& message) {
  return Error(message, ErrorContext{file, {}, {}, {}});
}
Error line_error(const std::string& file, int64_t line, const std::string& message) {
  return Error(message, ErrorContext{file, line, {}, {}});
}
Error offset_error(const std::string& file, uint64_t offset, const std::string& message) {
  return Error(message, ErrorContext{file, {}, offset, {}});
}
Error option_error(const std::string& option, const std::string& message) {
  return Error(message, ErrorContext{{}, {}, {}, option});
}
UsageError usage_error(const std::string& option, const std::string& message) {
  return UsageError(message, ErrorContext{{}, {}, {}, option});
}

}  // namespace ht
