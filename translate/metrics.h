// core::Metrics (the fit of a trained model per split, its sparsity and the
// weights pruning removed) -> sparrow.v1.Metrics, as stored with a
// TrainedModel and reported to clients.
#ifndef SPARROW_TRANSLATE_METRICS_H_
#define SPARROW_TRANSLATE_METRICS_H_

#include "core/train/trainer.h"
#include "sparrow/v1/model.pb.h"

namespace sparrow::translate {

v1::Metrics ToProto(const core::Metrics& metrics);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_METRICS_H_
