// Whether a checkpoint's SBDL state (SbdlOptions::resume) fits a problem, so
// that a resume can refuse one that MinimizeSbdl would start afresh from.
// Kept out of sbdl.h, which most of core includes.
#ifndef SPARROW_CORE_OPTIM_SBDL_STATE_H_
#define SPARROW_CORE_OPTIM_SBDL_STATE_H_

#include <vector>

#include "core/optim/sbdl/sbdl.h"

namespace sparrow::core {

// True when options.resume.state is empty or restores into the run that
// MinimizeSbdl(options, layers, objective, w, ..., linear) would make. Costs
// one evaluation of the mean squared residual at w.
bool SbdlStateFits(const SbdlOptions& options,
                   const std::vector<DenseBlock>& layers,
                   SbdlObjective& objective, const Eigen::VectorXd& w,
                   const DenseBlock* linear = nullptr);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_SBDL_STATE_H_
