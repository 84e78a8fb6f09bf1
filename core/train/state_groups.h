// The structure of a state-space RNN's parameters that model-order selection
// works on (Bemporad §4.2).
#ifndef SPARROW_CORE_TRAIN_STATE_GROUPS_H_
#define SPARROW_CORE_TRAIN_STATE_GROUPS_H_

#include <vector>

#include "Eigen/Core"
#include "core/models/state_space_rnn.h"

namespace sparrow::core {

// Group i of a state-space RNN: column i of the first fx and fy layers, row i
// of the last fx layer and entry i of its bias, and with a linear part column
// i of A and C and row i of B, as parameter indices. The groups are disjoint.
// Zeroing one removes state i.
std::vector<std::vector<int>> StateGroups(const StateSpaceRnn& rnn);

// States whose group is not all zero in w.
double ModelOrder(const StateSpaceRnn& rnn, const Eigen::VectorXd& w);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_STATE_GROUPS_H_
