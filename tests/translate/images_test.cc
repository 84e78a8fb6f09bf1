#include "translate/images.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/translate/testing/image_fixture.h"

namespace sparrow::translate {
namespace {

using ::sparrow::testing::Gzip;
using ::sparrow::testing::TinyImages;
using ::sparrow::testing::WriteTemp;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

v1::ImageFiles Files(const std::vector<std::string>& images,
                     const std::vector<std::string>& labels) {
  v1::ImageFiles f;
  for (const auto& i : images) f.add_images(i);
  for (const auto& l : labels) f.add_labels(l);
  return f;
}

TEST(ImagesTest, GunzipRoundTrips) {
  const std::string bytes(100000, 'x');
  absl::StatusOr<std::string> out = Gunzip(Gzip(bytes), 1 << 20, "f");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, bytes);
}

TEST(ImagesTest, GunzipReadsMembersBackToBack) {
  absl::StatusOr<std::string> out =
      Gunzip(Gzip("abc") + Gzip("def"), 1 << 20, "f");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "abcdef");
}

TEST(ImagesTest, GunzipCapsTheOutput) {
  absl::StatusOr<std::string> out =
      Gunzip(Gzip(std::string(300000, 'x')), 100000, "bomb.gz");
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(Message(out.status()), HasSubstr("bomb.gz decompresses to more "
                                               "than 100000 bytes"));
  EXPECT_THAT(Message(out.status()), HasSubstr("kMaxIdxFileBytes"));
}

TEST(ImagesTest, GunzipRejectsCorruptAndTruncatedData) {
  const std::string gz = Gzip(std::string(5000, 'y'));
  EXPECT_THAT(
      Message(Gunzip(gz.substr(0, gz.size() / 2), 1 << 20, "t.gz").status()),
      HasSubstr("t.gz ends in the middle of its gzip data"));
  std::string corrupt = gz;
  corrupt[12] ^= 0x55;
  corrupt[13] ^= 0x55;
  EXPECT_FALSE(Gunzip(corrupt, 1 << 20, "c.gz").ok());
}

TEST(ImagesTest, ReadsGzippedAndPlainFilePairsInOrder) {
  const core::data::ImageSet a = TinyImages(3);
  const core::data::ImageSet b = TinyImages(2);
  const v1::ImageFiles files = Files(
      {WriteTemp("a-img.gz", Gzip(core::data::SerializeIdxImages(a))),
       WriteTemp("b-img", core::data::SerializeIdxImages(b))},
      {WriteTemp("a-lab.gz", Gzip(core::data::SerializeIdxLabels(a.labels))),
       WriteTemp("b-lab", core::data::SerializeIdxLabels({2, 1}))});
  absl::StatusOr<core::data::ImageSet> set = ReadImageFiles(files);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 5);
  EXPECT_EQ(set->height, 4);
  EXPECT_THAT(set->labels, ElementsAre(0, 1, 2, 2, 1));
}

TEST(ImagesTest, ReadErrorsNameTheField) {
  const std::string img =
      WriteTemp("c-img", core::data::SerializeIdxImages(TinyImages(3)));
  const std::string lab =
      WriteTemp("c-lab", core::data::SerializeIdxLabels({0, 1}));
  EXPECT_THAT(Message(ReadImageFiles(Files({img}, {})).status()),
              HasSubstr("data.images.images names 1 image files and "
                        "data.images.labels 0"));
  EXPECT_THAT(Message(ReadImageFiles(Files({img}, {"/no/such"})).status()),
              HasSubstr("data.images.labels[0]: cannot open '/no/such'"));
  EXPECT_THAT(Message(ReadImageFiles(Files({lab}, {img})).status()),
              HasSubstr("data.images.images[0]"));
  EXPECT_THAT(Message(ReadImageFiles(Files({img}, {lab})).status()),
              HasSubstr("3 images but the label file 2 labels"));
  EXPECT_THAT(Message(ReadImageFiles(Files({img}, {lab}), "--").status()),
              HasSubstr("--images[0] and --labels[0]"));
}

TEST(ImagesTest, DatasetRoundTrips) {
  const core::data::ImageSet set = TinyImages(7);
  const std::string blob = PackImageDataset(set);
  EXPECT_TRUE(IsImageDataset(blob));
  EXPECT_EQ(blob.substr(0, 17), "SPARROW-IMAGES 1\n");
  EXPECT_EQ(blob.size(), 17u + 16u + 7u * 16u + 8u + 7u);
  absl::StatusOr<core::data::ImageSet> back = ParseImageDataset(blob);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->pixels, set.pixels);
  EXPECT_EQ(back->labels, set.labels);
  EXPECT_FALSE(IsImageDataset("u,y\n1,2\n"));
}

TEST(ImagesTest, MalformedDatasetsAreRefused) {
  const core::data::ImageSet set = TinyImages(3);
  const std::string blob = PackImageDataset(set);
  const std::string head(kImageDatasetMagic);
  const struct {
    std::string bytes;
    const char* message;
  } cases[] = {
      {"u,y\n", "SPARROW-IMAGES 1"},
      {head, "too short"},
      {blob.substr(0, 30), "truncated"},
      {blob + "z", "1 bytes after"},
      {blob.substr(0, blob.size() - 1), "truncated"},
      {head + core::data::SerializeIdxImages(set) +
           core::data::SerializeIdxLabels({1}),
       "3 images but the label file 1"},
      {head + core::data::SerializeIdxLabels({1}), "label file"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<core::data::ImageSet> out = ParseImageDataset(c.bytes);
    ASSERT_FALSE(out.ok()) << c.message;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(out.status()), HasSubstr(c.message));
  }
}

TEST(ImagesTest, PredictImagesAreIdxOrADatasetWithoutLabels) {
  const core::data::ImageSet set = TinyImages(2);
  absl::StatusOr<core::data::ImageSet> idx =
      ParsePredictImages(core::data::SerializeIdxImages(set));
  ASSERT_TRUE(idx.ok()) << idx.status();
  EXPECT_EQ(idx->size(), 2);
  absl::StatusOr<core::data::ImageSet> blob =
      ParsePredictImages(PackImageDataset(set));
  ASSERT_TRUE(blob.ok()) << blob.status();
  EXPECT_EQ(blob->size(), 2);
  EXPECT_TRUE(blob->labels.empty());
  EXPECT_FALSE(ParsePredictImages("garbage").ok());
}

TEST(ImagesTest, ReadsFashionMnist) {
  SKIP_WITHOUT_SHARED_DATA();
  const auto dir = sparrow::testing::SharedData() / "fashion_mnist";
  if (!std::filesystem::exists(dir / "t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "no Fashion-MNIST at " << dir.string();
  }
  const v1::ImageFiles files =
      Files({(dir / "t10k-images-idx3-ubyte.gz").string()},
            {(dir / "t10k-labels-idx1-ubyte.gz").string()});
  absl::StatusOr<core::data::ImageSet> set = ReadImageFiles(files);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 10000);
  EXPECT_EQ(set->channels, 1);
  EXPECT_EQ(set->height, 28);
  EXPECT_EQ(set->width, 28);
  EXPECT_EQ(set->labels[0], 9);  // the first test image is an ankle boot
  int per_class[10] = {};
  for (const uint8_t l : set->labels) ++per_class[l];
  for (const int n : per_class) EXPECT_EQ(n, 1000);
}

}  // namespace
}  // namespace sparrow::translate
