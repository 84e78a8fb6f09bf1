// OptimizerSpec and Stopping -> the core optimizer options: one function per
// options message (sgd, adam, lbfgs, nails, nailm, sbdl, b2ld, bling), each
// applying the spec's defaults (0 = the core default) and naming a bad field
// by its spec path.
#ifndef SPARROW_TRANSLATE_OPTIMIZER_CONFIG_H_
#define SPARROW_TRANSLATE_OPTIMIZER_CONFIG_H_

#include "absl/status/statusor.h"
#include "core/train/trainer.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// The spec's stopping block as core stop rules (0 = the default: 1000
// iterations, a record every one); patience is the trainer's, not here.
absl::StatusOr<core::StopRules> ToStopRules(const v1::Stopping& stopping);

// The chosen method's options, with `stop` as its stop rules (SBDL: its own
// outer_iterations and only the deadline). Sets the batch options of the
// methods that have them and the ADMM options of nails/nailm in *c; reads
// c->penalty (set it first): ADMM settings need a non-smooth penalty.
absl::StatusOr<core::OptimizerOptions> ToOptimizer(const v1::OptimizerSpec& opt,
                                                   const core::StopRules& stop,
                                                   core::TrainConfig* c);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_OPTIMIZER_CONFIG_H_
