// What exact zeros in a dense network's weights remove, and the smaller
// network without them. The weight matrices are the network's DenseBlocks.
//
// A hidden neuron is dead when no live neuron of the next layer reads it
// (all its outgoing weights are zero), or when it reads nothing live (all its
// incoming weights are zero: it outputs the constant f(b), which the next
// layer's bias absorbs). An input is dead when no live first-layer neuron
// reads it; for a NARX model that removes a lag. Thread safety: pure
// functions.
#ifndef SPARROW_CORE_MODELS_PRUNING_H_
#define SPARROW_CORE_MODELS_PRUNING_H_

#include <string>
#include <vector>

#include "Eigen/Core"
#include "core/models/mlp.h"
#include "core/models/network.h"

namespace sparrow::core {

struct LayerSparsity {
  int neurons = 0;  // rows of the weight matrix A (the layer's outputs)
  int inputs = 0;   // columns
  int zeros = 0;    // exactly-zero weights (biases not counted)
  double zero_pct = 0.0;
  double remaining_pct = 100.0;
};
// One entry per dense layer of `net`.
std::vector<LayerSparsity> WeightSparsity(const Network& net,
                                          const double* theta);

struct DeadUnits {
  std::vector<int> inputs;               // 0-based input indices
  std::vector<std::vector<int>> hidden;  // per hidden layer, 0-based neurons
};
// `net` must consist of dense layers only.
DeadUnits FindDeadUnits(const Network& net, const double* theta);
// The same for an Mlp; with a linear term an input is dead only when L's
// column for it is zero as well.
DeadUnits FindDeadUnits(const Mlp& mlp, const double* theta);

// "u(t-3)" for inputs (from input_names), "hidden 2 neuron 7" (1-based) for
// neurons.
std::vector<std::string> DeadUnitNames(
    const DeadUnits& dead, const std::vector<std::string>& input_names);

// The network without its dead units. Its inputs are the kept inputs of the
// original, in order; on them it predicts what the original predicts (up to
// rounding in the biases that absorbed constant neurons). A hidden layer left
// with no live neuron keeps one inert neuron (zero weights). A linear term
// keeps the inputs it reads, with their columns of L.
struct CompactNetwork {
  MlpSpec spec;
  Eigen::VectorXd params;
  std::vector<int> kept_inputs;
};
CompactNetwork CompactMlp(const Mlp& mlp, const double* theta);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_PRUNING_H_
