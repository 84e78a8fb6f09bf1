// The committed example specs trained on the real benchmark data, when
// ../shared/data is beside the checkout (skipped otherwise).
#include <filesystem>
#include <iostream>
#include <string>

#include "core/train/trainer.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"
#include "translate/sweep.h"

namespace sparrow::translate {
namespace {

using ::sparrow::testing::ReadFile;
using ::sparrow::testing::SourceDir;

// Trains examples/NAME.json with its seed replaced; `edit` may change the
// spec further.
template <typename Edit>
core::Metrics TrainExample(const std::string& name, int seed, Edit edit) {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpecJson(ReadFile(SourceDir() / "examples" / (name + ".json")));
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return {};
  spec->set_seed(seed);
  edit(*spec);
  // Paths in the examples are relative to the repository root.
  spec->mutable_data()->set_csv_path(
      (SourceDir() / spec->data().csv_path()).string());
  absl::StatusOr<core::TrainConfig> config = ToTrainConfig(*spec);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return {};
  absl::StatusOr<core::TrainData> data =
      LoadTrainData(*spec, *config, ReadFile(spec->data().csv_path()));
  EXPECT_TRUE(data.ok()) << data.status();
  if (!data.ok()) return {};
  absl::StatusOr<core::TrainResult> result =
      core::Train(*config, *data, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  return result->metrics;
}

// Every committed example passes the strict JSON checks and translates to a
// training configuration (no data needed).
TEST(ExamplesTest, EveryExampleIsAValidSpec) {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(SourceDir() / "examples")) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    absl::StatusOr<v1::JobSpec> spec = ParseJobSpecJson(ReadFile(entry.path()));
    ASSERT_TRUE(spec.ok()) << entry.path() << ": " << spec.status();
    absl::StatusOr<core::TrainConfig> config = ToTrainConfig(*spec);
    EXPECT_TRUE(config.ok()) << entry.path() << ": " << config.status();
    // A sweep's every trial is a valid spec too.
    absl::StatusOr<std::vector<Trial>> trials = ExpandSweep(*spec);
    ASSERT_TRUE(trials.ok()) << entry.path() << ": " << trials.status();
    for (const Trial& t : *trials) {
      EXPECT_TRUE(ToTrainConfig(t.spec).ok())
          << entry.path() << " trial " << TrialLabel(t);
    }
  }
  EXPECT_GT(count, 40);
}

// Seed 6 of the damper NAILS example is the one that Algorithm 1 as printed
// (min_cosine 0) leaves creeping along a near-unstable model at Armijo steps
// of 7.6e-6: training BFR 52.5 after 250 epochs on the x86-64-v3 build. The
// angle safeguard fits it. Which seeds stall depends on the last bits of the
// arithmetic (FMA or not, libm's exp), so the stall itself is reported, not
// required; the fit with the safeguard is required.
TEST(ExamplesTest, DamperNailsAngleSafeguardRescuesTheStalledSeed) {
  SKIP_WITHOUT_SHARED_DATA();
  const core::Metrics safeguarded =
      TrainExample("damper_nails", 6, [](v1::JobSpec&) {});
  EXPECT_GT(safeguarded.train_bfr, 90.0);
  EXPECT_GT(safeguarded.test_bfr, 85.0);
  const core::Metrics paper =
      TrainExample("damper_nails", 6, [](v1::JobSpec& s) {
        s.mutable_optimizer()->mutable_nails()->set_min_cosine(0.0);
      });
  RecordProperty("train_bfr_without_safeguard",
                 std::to_string(paper.train_bfr));
  if (paper.train_bfr >= 70.0) {
    std::cout << "note: seed 6 did not stall without the safeguard on this "
                 "build (train BFR "
              << paper.train_bfr << ")\n";
  }
}

}  // namespace
}  // namespace sparrow::translate
