// Spec JSON -> JobSpec (unknown fields refused) -> TrainConfig, the
// submission-time checks (ValidateDataSpec, the parameter count) and
// LoadTrainData on a small CSV: what sparrowd and `sparrow run --local` do with
// a spec before training.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/train/model.h"
#include "fuzz/fuzz_common.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static const std::string* const csv =
      new std::string(sparrow::fuzz::SmallCsv());
  static const std::vector<std::string> header = {"u", "y", "z"};
  auto spec = sparrow::translate::ParseJobSpecJson(
      absl::string_view(reinterpret_cast<const char*>(bytes), size));
  if (!spec.ok()) return 0;
  auto config = sparrow::translate::ToTrainConfig(*spec);
  if (!config.ok()) return 0;
  (void)sparrow::core::CountParameters(config->model, 1, 1).ok();
  if (!sparrow::translate::ValidateDataSpec(*spec, header, 48).ok()) return 0;
  (void)sparrow::translate::LoadTrainData(*spec, *config, *csv).ok();
  return 0;
}
