// Whether a reported ADMM state (AdmmOptions::initial_state) fits a problem,
// so that a resume can refuse a checkpoint that MinimizeAdmm would ignore.
// Kept out of admm.h, which most of core includes.
#ifndef SPARROW_CORE_OPTIM_ADMM_STATE_H_
#define SPARROW_CORE_OPTIM_ADMM_STATE_H_

#include "core/optim/admm/admm.h"

namespace sparrow::core {

// True when options.initial_state is empty or is a state MinimizeAdmm
// reports for a split of `split_size` parameters out of `num_params`.
bool AdmmStateFits(const AdmmOptions& options, int split_size, int num_params);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_ADMM_STATE_H_
