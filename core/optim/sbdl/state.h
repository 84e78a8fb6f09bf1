// Whether a checkpoint's SBDL state (SbdlOptions::resume) fits a problem, so
// that a resume can refuse one that MinimizeSbdl would start afresh from.
// Kept out of sbdl.h, which most of core includes.
#ifndef SPARROW_CORE_OPTIM_SBDL_STATE_H_
#define SPARROW_CORE_OPTIM_SBDL_STATE_H_

#include <vector>

#include "core/optim/sbdl/sbdl.h"

namespace sparrow::core {

// True when options.resume.state is empty or restores into the run that
// MinimizeSbdl(options, layers, objective, ..., linear) makes for an
// objective of `num_params` parameters. Builds no run.
bool SbdlStateFits(const SbdlOptions& options,
                   const std::vector<DenseBlock>& layers, int num_params,
                   const DenseBlock* linear = nullptr);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_SBDL_STATE_H_
