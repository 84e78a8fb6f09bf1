// OptimizerSpec -> the optimizer fields of core::TrainConfig: one function per
// options message (sgd, adam, lbfgs, nails, nailm, sbdl, b2ld, bling), each
// applying the spec's defaults (0 = default) and naming a bad field.
#ifndef SPARROW_TRANSLATE_OPTIMIZER_CONFIG_H_
#define SPARROW_TRANSLATE_OPTIMIZER_CONFIG_H_

#include "absl/status/status.h"
#include "core/train/trainer.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// Sets c->optimizer and the options of the chosen method, and the batch
// options of the methods that have them. Reads c->penalty (set it first): the
// ADMM settings of nails/nailm need a non-smooth penalty.
absl::Status ToOptimizer(const v1::OptimizerSpec& opt, core::TrainConfig* c);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_OPTIMIZER_CONFIG_H_
