#include "datasets/npy.hpp"

#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/half.hpp"

namespace ht::data {
namespace {

struct TypeInfo {
  const char* descr;
  NpyType type;
  int64_t size;
};
// NumPy writes one-byte types with '|'; '<u1' and '<b1' are accepted too.
constexpr TypeInfo kTypes[] = {
    {"<f2", NpyType::f2, 2}, {"<f4", NpyType::f4, 4}, {"<f8", NpyType::f8, 8}, {"<i4", NpyType::i4, 4}, {"<i8", NpyType::i8, 8},
    {"|u1", NpyType::u1, 1}, {"<u1", NpyType::u1, 1}, {"|b1", NpyType::b1, 1}, {"<b1", NpyType::b1, 1},
};

// Cursor over the header's Python dict literal.
class DictText {
 public:
  DictText(std::string_view text, const std::string& path, int64_t offset)
      : text_(text), path_(path), offset_(offset) {}

  // Position just after "'key':" (whitespace skipped), or fails.
  size_t value_of(std::string_view key) const {
    for (char q : {'\'', '"'}) {
      const std::string quoted = fmt::format("{}{}{}", q, key, q);
      size_t p = text_.find(quoted);
      if (p == std::string_view::npos) continue;
      p = skip(p + quoted.size());
      if (p < text_.size() && text_[p] == ':') return skip(p + 1);
    }
    fail(fmt::format("header has no '{}' entry", key));
  }
  std::string_view quoted_string(size_t p) const {
    if (p >= text_.size() || (text_[p] != '\'' && text_[p] != '"')) fail("header: 'descr' must be a string (structured dtypes are not supported)");
    const size_t end = text_.find(text_[p], p + 1);
    if (end == std::string_view::npos) fail("header: unterminated string");
    return text_.substr(p + 1, end - p - 1);
  }
  bool boolean(size_t p) const {
    if (text_.substr(p, 4) == "True") return true;
    if (text_.substr(p, 5) == "False") return false;
    fail("header: 'fortran_order' must be True or False");
  }
  std::vector<int64_t> tuple(size_t p) const {
    if (p >= text_.size() || text_[p] != '(') fail("header: 'shape' must be a tuple");
    std::vector<int64_t> dims;
    p = skip(p + 1);
    while (p < text_.size() && text_[p] != ')') {
      int64_t v = -1;
      auto [q, ec] = std::from_chars(text_.data() + p, text_.data() + text_.size(), v);
      if (ec != std::errc() || v < 0) fail("header: 'shape' must hold non-negative integers");
      dims.push_back(v);
      p = skip(static_cast<size_t>(q - text_.data()));
      if (p < text_.size() && text_[p] == ',') p = skip(p + 1);
    }
    if (p >= text_.size()) fail("header: unterminated 'shape' tuple");
    return dims;
  }
  [[noreturn]] void fail(const std::string& message) const { throw offset_error(path_, offset_, message); }

 private:
  size_t skip(size_t p) const {
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return p;
  }
  std::string_view text_;
  const std::string& path_;
  int64_t offset_;
};

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

const char* npy_type_name(NpyType t) {
  switch (t) {
    case NpyType::f4: return "float32";
    case NpyType::f8: return "float64";
    case NpyType::i4: return "int32";
    case NpyType::i8: return "int64";
    case NpyType::u1: return "uint8";
    case NpyType::b1: return "bool";
    case NpyType::f2: return "float16";
  }
  return "?";
}

NpyArray::NpyArray(const std::string& path) : file_(path), name_(path) { parse_header(); }

NpyArray::NpyArray(std::string name, std::vector<std::byte> bytes) : owned_(std::move(bytes)), name_(std::move(name)) {
  parse_header();
}

void NpyArray::parse_header() {
  const std::string& path = name_;
  const auto* b = reinterpret_cast<const unsigned char*>(data());
  const int64_t size = static_cast<int64_t>(this->size());
  if (size < 10 || std::memcmp(b, "\x93NUMPY", 6) != 0)
    throw offset_error(path, 0, "not a NumPy .npy file (magic \\x93NUMPY missing)");
  const int major = b[6];
  if (major < 1 || major > 3)
    throw offset_error(path, 6, fmt::format("unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are)", major, b[7]));
  int64_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = b[8] | (b[9] << 8);
    header_at = 10;
  } else {
    if (size < 12) throw offset_error(path, 8, "truncated .npy header");
    header_len = static_cast<int64_t>(b[8]) | (static_cast<int64_t>(b[9]) << 8) | (static_cast<int64_t>(b[10]) << 16) |
                 (static_cast<int64_t>(b[11]) << 24);
    header_at = 12;
  }
  if (header_at + header_len > size)
    throw offset_error(path, header_at, fmt::format("truncated .npy header: {} bytes announced, file has {}",
                                                    header_len, size - header_at));
  const DictText dict(std::string_view(reinterpret_cast<const char*>(b + header_at), header_len), path, header_at);
  const std::string_view descr = dict.quoted_string(dict.value_of("descr"));
  const TypeInfo* info = nullptr;
  for (const TypeInfo& t : kTypes)
    if (descr == t.descr) info = &t;
  if (!info)
    dict.fail(fmt::format("unsupported dtype '{}' (supported: <f2 <f4 <f8 <i4 <i8 |u1 |b1, little-endian)", descr));
  type_ = info->type;
  item_size_ = info->size;
  fortran_ = dict.boolean(dict.value_of("fortran_order"));
  shape_ = dict.tuple(dict.value_of("shape"));
  if (shape_.empty() || shape_.size() > 2)
    dict.fail(fmt::format("{}-D array: only 1-D and 2-D arrays are supported", shape_.size()));
  data_offset_ = header_at + header_len;
  const __int128 need = static_cast<__int128>(rows()) * cols() * item_size_;
  const int64_t have = size - data_offset_;
  if (need != have)
    throw offset_error(path, data_offset_,
                       fmt::format("{} array of shape {} needs {} data bytes, the file has {}{}", npy_type_name(type_),
                                   shape_text(), static_cast<int64_t>(need), have,
                                   need > have ? " (truncated file)" : ""));
}

std::string NpyArray::shape_text() const {
  return shape_.size() == 1 ? fmt::format("({},)", shape_[0]) : fmt::format("({}, {})", shape_[0], shape_[1]);
}

double NpyArray::as_double(int64_t i) const {
  const std::byte* p = data() + offset_of(i);
  switch (type_) {
    case NpyType::f4: return load<float>(p);
    case NpyType::f8: return load<double>(p);
    case NpyType::f2: return f16_to_float(load<uint16_t>(p));  // exact: every fp16 value is a float
    case NpyType::i4: return load<int32_t>(p);
    case NpyType::i8: return static_cast<double>(load<int64_t>(p));
    case NpyType::u1:
    case NpyType::b1: return static_cast<double>(load<uint8_t>(p));
  }
  return 0;
}

int64_t NpyArray::as_int64(int64_t i) const {
  const std::byte* p = data() + offset_of(i);
  switch (type_) {
    case NpyType::i4: return load<int32_t>(p);
    case NpyType::i8: return load<int64_t>(p);
    case NpyType::u1:
    case NpyType::b1: return load<uint8_t>(p);
    default: return static_cast<int64_t>(as_double(i));
  }
}

std::vector<float> NpyArray::to_float32() const {
  const int64_t n = count();
  std::vector<float> out(n);
  if (type_ == NpyType::f4 && !fortran_) {
    std::memcpy(out.data(), data() + data_offset_, static_cast<size_t>(n) * 4);
    return out;
  }
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(as_double(i));
  return out;
}

}  // namespace ht::data
