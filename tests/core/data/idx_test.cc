#include "core/data/idx.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparrow::core::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// `n` images of 2 x 3 pixels, pixel k of image i = 10 i + k.
ImageSet Tiny(int n, int channels = 1) {
  ImageSet set;
  set.channels = channels;
  set.height = 2;
  set.width = 3;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 6 * channels; ++k) set.pixels.push_back(10 * i + k);
  }
  return set;
}

TEST(IdxTest, ImagesRoundTrip) {
  const std::string bytes = SerializeIdxImages(Tiny(3));
  ASSERT_EQ(bytes.size(), 16u + 18u);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\0\0\x08\x03", 4));
  absl::StatusOr<ImageSet> set = ParseIdxImages(bytes, "a.idx");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 3);
  EXPECT_EQ(set->channels, 1);
  EXPECT_EQ(set->height, 2);
  EXPECT_EQ(set->width, 3);
  EXPECT_EQ(set->pixels, Tiny(3).pixels);
  EXPECT_TRUE(set->labels.empty());
}

TEST(IdxTest, FourDimensionalImagesRoundTrip) {
  const std::string bytes = SerializeIdxImages(Tiny(2, 3));
  EXPECT_EQ(bytes.substr(0, 4), std::string("\0\0\x08\x04", 4));
  absl::StatusOr<ImageSet> set = ParseIdxImages(bytes, "a.idx");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->channels, 3);
  EXPECT_EQ(set->size(), 2);
  EXPECT_EQ(set->image_size(), 18);
}

TEST(IdxTest, LabelsRoundTrip) {
  const std::string bytes = SerializeIdxLabels({7, 0, 9});
  absl::StatusOr<std::vector<uint8_t>> labels = ParseIdxLabels(bytes, "l");
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_THAT(*labels, ElementsAre(7, 0, 9));
}

TEST(IdxTest, FileSizeFindsTheEndOfTheFirstFile) {
  const std::string images = SerializeIdxImages(Tiny(2));
  const std::string both = images + SerializeIdxLabels({1, 2});
  absl::StatusOr<size_t> size = IdxFileSize(both, "blob");
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, images.size());
  EXPECT_THAT(Message(IdxFileSize(images.substr(0, 20), "f").status()),
              HasSubstr("truncated"));
}

TEST(IdxTest, RejectsBadFiles) {
  const std::string good = SerializeIdxImages(Tiny(2));
  const struct {
    std::string bytes;
    const char* message;
  } cases[] = {
      {"", "too short"},
      {std::string("\x1f\x8b\x08\x00", 4), "gzip-compressed"},
      {"P5\n2 3", "not an IDX file"},
      {std::string("\0\0\x0d\x03", 4) + good.substr(4), "type 0x0d (float)"},
      {good.substr(0, 10), "truncated"},
      {good.substr(0, good.size() - 1), "truncated"},
      {good + "x", "1 bytes after"},
      {SerializeIdxLabels({1}), "label file"},
      {std::string("\0\0\x08\x02\0\0\0\1\0\0\0\1x", 13), "magic 0x00000802"},
      {std::string("\0\0\x08\x03\0\0\0\1\0\0\0\0\0\0\0\3", 16), "1 or more"},
      {std::string("\0\0\x08\x04\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff"
                   "\xff\xff\xff\xff",
                   20),
       "at most 16777216 values"},
      {std::string("\0\0\x08\x04\xff\xff\xff\xff\xff\xff\xff\xff"
                   "\xff\xff\xff\xff\xff\xff\xff\xff",
                   20),
       "overflows"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<ImageSet> set = ParseIdxImages(c.bytes, "train.idx");
    ASSERT_FALSE(set.ok()) << c.message;
    EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(set.status()), HasSubstr("train.idx"));
    EXPECT_THAT(Message(set.status()), HasSubstr(c.message));
  }
}

TEST(IdxTest, LabelFileMustBeLabels) {
  absl::StatusOr<std::vector<uint8_t>> labels =
      ParseIdxLabels(SerializeIdxImages(Tiny(1)), "labels.idx");
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(Message(labels.status()), HasSubstr("swapped"));
}

TEST(IdxTest, AppendChecksCountsAndShapes) {
  ImageSet set;
  ASSERT_TRUE(AppendLabeledImages(Tiny(2), {1, 2}, "pair 1", &set).ok());
  ASSERT_TRUE(AppendLabeledImages(Tiny(1), {3}, "pair 2", &set).ok());
  EXPECT_EQ(set.size(), 3);
  EXPECT_THAT(set.labels, ElementsAre(1, 2, 3));
  EXPECT_EQ(set.pixels[12], 0);  // image 3 is the first of pair 2

  absl::Status count = AppendLabeledImages(Tiny(2), {1}, "pair 3", &set);
  EXPECT_THAT(Message(count), HasSubstr("2 images but the label file 1"));
  absl::Status shape = AppendLabeledImages(Tiny(1, 3), {1}, "pair 3", &set);
  EXPECT_THAT(Message(shape), HasSubstr("one shape"));
}

TEST(IdxTest, TableScalesPixelsAndKeepsRowOrder) {
  ImageSet set;
  ASSERT_TRUE(AppendLabeledImages(Tiny(3), {4, 5, 6}, "p", &set).ok());
  absl::StatusOr<TableData> t = MakeImageTable(set, {3, 1});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->x.rows(), 6);
  ASSERT_EQ(t->x.cols(), 2);
  EXPECT_DOUBLE_EQ(t->x(0, 0), 20 / 255.0);
  EXPECT_DOUBLE_EQ(t->x(5, 1), 5 / 255.0);
  EXPECT_DOUBLE_EQ(t->y(0, 0), 6);
  EXPECT_DOUBLE_EQ(t->y(0, 1), 4);
  EXPECT_EQ(t->input_names.front(), "pixel0");
  EXPECT_EQ(t->input_names.back(), "pixel5");
  EXPECT_THAT(t->output_names, ElementsAre("label"));
  EXPECT_EQ(t->image_channels, 1);
  EXPECT_EQ(t->image_height, 2);
  EXPECT_EQ(t->image_width, 3);

  EXPECT_THAT(Message(MakeImageTable(set, {4}).status()),
              HasSubstr("outside the dataset's images 1-3"));
  EXPECT_FALSE(MakeImageTable(set, {}).ok());
}

TEST(IdxTest, UnlabeledTableHasNoOutputs) {
  absl::StatusOr<TableData> t = MakeImageTable(Tiny(2), {1, 2});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->y.rows(), 0);
  EXPECT_EQ(t->y.cols(), 2);
}

}  // namespace
}  // namespace sparrow::core::data
