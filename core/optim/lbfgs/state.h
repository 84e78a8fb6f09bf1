// Whether a reported L-BFGS state (LbfgsOptions::initial_state) fits a
// problem, so that a resume can refuse a checkpoint it would otherwise start
// afresh from. Kept out of lbfgs.h, which most of core includes.
#ifndef SPARROW_CORE_OPTIM_LBFGS_STATE_H_
#define SPARROW_CORE_OPTIM_LBFGS_STATE_H_

#include "Eigen/Core"

namespace sparrow::core {

// True for an empty state (no correction pairs yet) and for one holding
// 1..memory pairs of `num_params` values each, as MinimizeLbfgs reports them.
bool LbfgsStateFits(const Eigen::VectorXd& state, Eigen::Index num_params,
                    int memory);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_LBFGS_STATE_H_
