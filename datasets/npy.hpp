#pragma once
// NumPy .npy reader (format versions 1.0, 2.0 and 3.0; C or Fortran order;
// 1-D or 2-D; elements are addressed in row-major order either way)
// over a memory map or a buffer (the members of an .npz, datasets/npz.hpp). dtypes: <f2 <f4 <f8 <i4 <i8 |u1 (also written <u1) |b1.
// Every error names the file and the byte offset.
#include <cstdint>
#include <string>
#include <vector>

#include "core/file_io.hpp"

namespace ht::data {

enum class NpyType { f4, f8, i4, i8, u1, b1, f2 };
const char* npy_type_name(NpyType t);

class NpyArray {
 public:
  explicit NpyArray(const std::string& path);
  // An .npy held in memory (a member of an .npz archive); `name` stands for
  // the path in messages ("archive.npz:edges.npy"), offsets are into `bytes`.
  NpyArray(std::string name, std::vector<std::byte> bytes);

  const std::string& path() const { return name_; }
  NpyType type() const { return type_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t rows() const { return shape_.empty() ? 1 : shape_[0]; }
  int64_t cols() const { return shape_.size() == 2 ? shape_[1] : 1; }
  int64_t count() const { return rows() * cols(); }
  std::string shape_text() const;  // "(3, 4)" like NumPy
  bool is_integral() const { return type_ != NpyType::f4 && type_ != NpyType::f8 && type_ != NpyType::f2; }
  // Byte offset of element i (row-major index) in the file (for messages).
  int64_t offset_of(int64_t i) const { return data_offset_ + physical(i) * item_size_; }

  // Element i converted; integer reads of float arrays are rejected by the callers.
  double as_double(int64_t i) const;
  int64_t as_int64(int64_t i) const;

  std::vector<float> to_float32() const;  // every element, row-major

 private:
  void parse_header();
  // Storage index of row-major element i (Fortran order stores columns).
  int64_t physical(int64_t i) const { return fortran_ ? (i % cols()) * rows() + i / cols() : i; }
  const std::byte* data() const { return owned_.empty() ? file_.data() : owned_.data(); }
  size_t size() const { return owned_.empty() ? file_.size() : owned_.size(); }
  MappedFile file_;
  std::vector<std::byte> owned_;
  std::string name_;
  NpyType type_ = NpyType::f4;
  std::vector<int64_t> shape_;
  int64_t data_offset_ = 0;
  int64_t item_size_ = 4;
  bool fortran_ = false;
};

}  // namespace ht::data
