// Tiny labeled image sets and IDX files for the image tests.
#ifndef SPARROW_TESTS_TRANSLATE_TESTING_IMAGE_FIXTURE_H_
#define SPARROW_TESTS_TRANSLATE_TESTING_IMAGE_FIXTURE_H_

#include <zlib.h>

#include <fstream>
#include <string>

#include "core/data/idx.h"
#include "gtest/gtest.h"

namespace sparrow::testing {

// `n` images of 4 x 4 pixels, image i of class i % 3: row (i % 3) is bright,
// the rest dark with a faint pattern, so a small classifier learns them.
inline core::data::ImageSet TinyImages(int n) {
  core::data::ImageSet set;
  set.channels = 1;
  set.height = 4;
  set.width = 4;
  for (int i = 0; i < n; ++i) {
    const int label = i % 3;
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 4; ++c) {
        set.pixels.push_back(r == label ? 200 + 10 * c : (i * 7 + c) % 30);
      }
    }
    set.labels.push_back(static_cast<uint8_t>(label));
  }
  return set;
}

// gzip (one member) of `bytes`.
inline std::string Gzip(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS,
                         8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Writes `bytes` to a file named `name` in the test's temporary directory
// and returns its path.
inline std::string WriteTemp(const std::string& name,
                             const std::string& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace sparrow::testing

#endif  // SPARROW_TESTS_TRANSLATE_TESTING_IMAGE_FIXTURE_H_
