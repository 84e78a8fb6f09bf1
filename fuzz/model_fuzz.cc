// TrainedModel bytes (as stored, and as `sparrow predict --local` reads them)
// -> core::Model (FromProto) -> Predict on a small CSV, free-run, one-step and
// with prediction intervals: what ModelService.Predict does with a stored
// model.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.h"
#include "sparrow/v1/model.pb.h"
#include "translate/model.h"
#include "translate/predict.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static const std::string* const csv =
      new std::string(sparrow::fuzz::SmallCsv());
  sparrow::v1::TrainedModel model;
  if (!model.ParseFromArray(bytes, static_cast<int>(size))) return 0;
  if (!sparrow::translate::FromProto(model).ok()) return 0;
  for (int mode = 0; mode < 3; ++mode) {
    sparrow::translate::PredictOptions options;
    options.one_step = mode >= 1;
    options.intervals = mode == 2;
    (void)sparrow::translate::Predict(model, *csv, options).ok();
  }
  return 0;
}
