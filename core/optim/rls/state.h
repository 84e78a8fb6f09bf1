// Whether a reported RLS state (RlsOptions::initial_state) fits a network,
// checked without building the P matrices, so that a resume can refuse a
// checkpoint that MinimizeRls would start afresh from. Kept out of rls.h,
// which most of core includes.
#ifndef SPARROW_CORE_OPTIM_RLS_STATE_H_
#define SPARROW_CORE_OPTIM_RLS_STATE_H_

#include <vector>

#include "core/optim/rls/rls.h"

namespace sparrow::core {

// True when options.initial_state is empty or is what
// RlsOptimizer(options, blocks, num_params).UnpackState accepts. The blocks
// must pass CheckRlsBlocks.
bool RlsStateFits(const RlsOptions& options,
                  const std::vector<NetworkMatrixBlock>& blocks,
                  int num_params);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_RLS_STATE_H_
