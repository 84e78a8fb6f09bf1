// Image datasets through the real services: DatasetService.Upload of the
// image format (metadata, malformed bytes, the upload limit), the submission
// checks against the image count, training an mlp on the images in a worker,
// and ModelService.Predict on images (classes, probabilities, the limit).
#include "translate/images.h"

#include <string>

#include "gtest/gtest.h"
#include "server/service/common.h"
#include "tests/server/testing/service_fixture.h"
#include "tests/translate/testing/image_fixture.h"
#include "translate/predict.h"
#include "translate/sha256.h"

namespace sparrow::server {
namespace {

using ::sparrow::testing::TinyImages;
using testing::ServiceFixture;

class ImagesTest : public ServiceFixture {};

// An mlp softmax classifier on an uploaded image dataset of `images` images:
// train on the first 2/3, test on the rest.
v1::JobSpec ImageSpec(const std::string& dataset_id, int images) {
  v1::JobSpec spec;
  spec.set_name("images");
  spec.mutable_data()->set_dataset_id(dataset_id);
  auto* train = spec.mutable_split()->add_train();
  train->set_first(1);
  train->set_last(images * 2 / 3);
  auto* test = spec.mutable_split()->add_test();
  test->set_first(images * 2 / 3 + 1);
  test->set_last(images);
  spec.mutable_model()->mutable_mlp()->add_hidden(6);
  spec.mutable_loss()->set_kind(v1::LOSS_SOFTMAX_CROSS_ENTROPY);
  spec.mutable_optimizer()->mutable_lbfgs();
  spec.mutable_stopping()->set_max_epochs(60);
  spec.set_seed(2);
  return spec;
}

TEST_F(ImagesTest, UploadDescribesTheImages) {
  const std::string blob = translate::PackImageDataset(TinyImages(30));
  v1::UploadDatasetResponse response;
  grpc::Status s = Upload(blob, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const v1::Dataset& d = response.dataset();
  EXPECT_EQ(d.id(), translate::Sha256Hex(blob));
  EXPECT_EQ(d.format(), v1::DATASET_FORMAT_IMAGES);
  EXPECT_EQ(d.rows(), 30);
  EXPECT_EQ(d.columns_size(), 0);
  EXPECT_EQ(d.image_shape().channels(), 1);
  EXPECT_EQ(d.image_shape().height(), 4);
  EXPECT_EQ(d.image_shape().width(), 4);
  EXPECT_EQ(d.classes(), 3);  // labels 0..2
  EXPECT_EQ(d.size_bytes(), static_cast<int64_t>(blob.size()));
  v1::Dataset got;
  ASSERT_TRUE(GetDataset(d.id(), &got).ok());
  EXPECT_EQ(got.SerializeAsString(), d.SerializeAsString());
}

TEST_F(ImagesTest, MalformedImageDatasetIsRefused) {
  const std::string blob = translate::PackImageDataset(TinyImages(30));
  v1::UploadDatasetResponse response;
  grpc::Status s = Upload(blob.substr(0, blob.size() - 3), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("not a valid Sparrow image dataset"),
            std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("truncated"), std::string::npos);
  EXPECT_TRUE(AllDatasetIds().empty());
}

TEST_F(ImagesTest, SubmissionChecksTheSplitAgainstTheImages) {
  const std::string id =
      UploadOrDie(translate::PackImageDataset(TinyImages(30)));
  v1::JobSpec spec = ImageSpec(id, 30);
  spec.mutable_split()->mutable_test(0)->set_last(31);
  v1::Job job;
  grpc::Status s = Submit(spec, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("split.test"), std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("30"), std::string::npos)
      << s.error_message();

  spec = ImageSpec(id, 30);
  spec.mutable_data()->add_inputs("pixel0");
  s = Submit(spec, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("data.inputs is set but the data are "
                                   "images"),
            std::string::npos)
      << s.error_message();
}

// A cnn spec without a shape takes the images': 1 x 4 x 8 pixels (32, not
// a square) are accepted at submission and trained on.
TEST_F(ImagesTest, CnnTakesTheShapeOfNonSquareImages) {
  core::data::ImageSet wide = TinyImages(30);
  wide.width = 8;
  wide.pixels.resize(30 * 32);
  const std::string id = UploadOrDie(translate::PackImageDataset(wide));
  v1::JobSpec spec = ImageSpec(id, 30);
  auto* cnn = spec.mutable_model()->mutable_cnn();
  auto* conv = cnn->add_layers()->mutable_conv();
  conv->set_filters(2);
  conv->set_kernel(3);
  conv->set_padding(1);
  cnn->add_layers()->mutable_flatten();
  spec.mutable_optimizer()->mutable_adam();
  spec.mutable_stopping()->set_max_epochs(2);
  v1::Job job = SubmitOrDie(spec);
  WaitForState(job.id(), v1::Job::SUCCEEDED);
}

TEST_F(ImagesTest, TrainsAndPredictsClassesWithProbabilities) {
  const std::string id =
      UploadOrDie(translate::PackImageDataset(TinyImages(60)));
  v1::Job job = SubmitOrDie(ImageSpec(id, 60));
  job = WaitForState(job.id(), v1::Job::SUCCEEDED);

  core::data::ImageSet images = TinyImages(6);
  v1::PredictRequest request;
  request.set_job_id(job.id());
  request.set_images(core::data::SerializeIdxImages(images));
  v1::PredictResponse response;
  grpc::Status s = Predict(request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(response.csv().empty());
  EXPECT_EQ(response.samples(), 6);
  ASSERT_EQ(response.images_size(), 6);
  for (int j = 0; j < 6; ++j) {
    const v1::ImagePrediction& p = response.images(j);
    EXPECT_EQ(p.label(), images.labels[j]) << "image " << j;
    ASSERT_EQ(p.probabilities_size(), 3);
    EXPECT_NEAR(p.probabilities(0) + p.probabilities(1) + p.probabilities(2),
                1.0, 1e-12);
    EXPECT_DOUBLE_EQ(p.probability(), p.probabilities(p.label()));
  }

  // The image dataset format works too (its labels are ignored).
  request.set_images(translate::PackImageDataset(images));
  ASSERT_TRUE(Predict(request, &response).ok());

  request.set_images("not an IDX file");
  s = Predict(request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  core::data::ImageSet many = TinyImages(1);
  many.pixels.resize((translate::kMaxPredictImages + 1) * 16);
  request.set_images(core::data::SerializeIdxImages(many));
  s = Predict(request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("kMaxPredictImages"), std::string::npos)
      << s.error_message();
}

class ImageUploadLimitTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.max_upload_bytes = 4096;
  }
};

TEST_F(ImageUploadLimitTest, TheUploadLimitAppliesToImages) {
  const std::string big = translate::PackImageDataset(TinyImages(300));
  ASSERT_GT(big.size(), 4096u);
  v1::UploadDatasetResponse response;
  grpc::Status s = Upload(big, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("--max-upload-bytes"), std::string::npos)
      << s.error_message();
}

}  // namespace
}  // namespace sparrow::server
