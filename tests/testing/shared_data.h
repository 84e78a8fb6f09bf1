// The real benchmark files in ../shared/data beside the checkout, for tests
// that skip (not fail) where it is absent.
#ifndef SPARROW_TESTS_TESTING_SHARED_DATA_H_
#define SPARROW_TESTS_TESTING_SHARED_DATA_H_

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sparrow::testing {

// The repository root (SPARROW_SOURCE_DIR, set by CMake for every test).
inline std::filesystem::path SourceDir() {
  return std::filesystem::path(SPARROW_SOURCE_DIR);
}

inline std::filesystem::path SharedData() {
  return SourceDir() / ".." / "shared" / "data";
}

// The whole file, or "" when it cannot be read.
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace sparrow::testing

// In a TEST body: skips the test when ../shared/data is absent.
#define SKIP_WITHOUT_SHARED_DATA()                                      \
  if (!std::filesystem::is_directory(::sparrow::testing::SharedData())) \
  GTEST_SKIP() << "no shared data at "                                  \
               << ::sparrow::testing::SharedData().string()

#endif  // SPARROW_TESTS_TESTING_SHARED_DATA_H_
