#pragma once
// Headerless CSV files of numbers (OGB's raw/*.csv.gz: edge.csv "src,dst",
// node-feat.csv one row of F values per vertex, node-label.csv, split id
// lists): every line has the same column count. gzip is inflated
// (datasets/text_input.hpp). Lines are parsed in parallel; an error names
// the file, the exact line and the token.
#include <cstdint>
#include <string>
#include <vector>

namespace ht::data {

template <typename T>
struct CsvNumbers {
  int64_t rows = 0, cols = 0;
  std::vector<T> values;  // rows * cols, row-major
};

// `what` names the content in messages ("node features"). float and double
// accept nan/inf (the finite check comes later, in ht-convert); integers must
// be integers.
CsvNumbers<float> read_csv_floats(const std::string& path, const char* what);
CsvNumbers<double> read_csv_doubles(const std::string& path, const char* what);
CsvNumbers<int64_t> read_csv_integers(const std::string& path, const char* what);

}  // namespace ht::data
