// Fully connected multilayer perceptron on one contiguous parameter vector: a
// Network of DenseLayers (core/models/network.h) plus the derivatives only a
// dense network has in closed form.
//
// Layer i computes v_i = A_i z_{i-1} + b_i, z_i = f_i(v_i) with A_i stored out
// x in, column-major, and the parameter layout theta = [vec A_1; b_1; ...; vec
// A_L; b_L] (ALGORITHMS.md §2.1). Hidden layers share one activation; the last
// layer has its own (linear for regression, sigmoid for binary outputs).
//
// Batch Forward / Backward run through the Network. What Mlp adds: per-sample
// output Jacobians (Gauss-Newton rows), the diagonal generalized Gauss-Newton
// (SBDL), the first-order output variance (SBDL prediction intervals), and
// per-column forward / backward kernels for recursions that evaluate one
// sample at a time (NARX free-run simulation, the state-space RNN's fx / fy).
//
// Samples are columns. An Mlp is immutable after construction and safe to share
// between threads; all per-evaluation state lives in an Mlp::Cache owned by the
// caller, so evaluating allocates nothing once a cache has its size.
#ifndef SPARROW_CORE_MODELS_MLP_H_
#define SPARROW_CORE_MODELS_MLP_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/activation.h"
#include "core/models/layers/dense.h"
#include "core/models/network.h"
#include "core/util/random.h"

namespace sparrow::core {

// Jacobians are row-major: each row (the derivative of one output) is
// contiguous, which is what the Gauss-Newton rows and the sensitivity
// recursion (row combinations of M) stream through.
using RowMatrixXd =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct MlpSpec {
  int inputs = 0;
  std::vector<int>
      hidden;  // widths of the hidden layers, may be empty (affine model)
  int outputs = 0;
  Activation hidden_activation = Activation::kTanh;
  Activation output_activation = Activation::kLinear;
  // False: no bias terms (the bias-free networks of Palagi & Seccia's BLD);
  // every layer then has only its weight matrix.
  bool bias = true;
  // How the layers draw their initial weights (layer.h).
  InitLaw init = InitLaw::kGlorot;
  // The arithmetic of the layers' products (layer.h).
  Precision precision = Precision::kFloat64;
  // A linear term beside the network: out = net(x) + L x, with L (outputs x
  // inputs, column-major) after the network's parameters. Needs a linear
  // output activation. The network's layers do not see L; Mlp's kernels add
  // its terms (the NARX model's linear part).
  bool linear = false;
};

// Checks sizes; `name` prefixes the message (e.g. "model.mlp").
// Besides positive sizes: hidden widths at most kMaxLayerWidth, and, unless
// limit_params is false (for counting a model's size), at most
// kMaxNetworkParams parameters (the library indexes parameters with int).
absl::Status ValidateMlpSpec(const MlpSpec& spec, absl::string_view name,
                             bool limit_params = true);

inline constexpr int kMaxLayerWidth = 100000;
inline constexpr int64_t kMaxNetworkParams = std::numeric_limits<int>::max();

// The parameters of a network of this shape, counted in 64 bits (so that a
// spec too large for the library still gets a correct count in messages).
int64_t CountMlpParameters(const MlpSpec& spec);

class Mlp {
 public:
  // The weights and biases of one layer in theta.
  using Layer = DenseBlock;

  // Per-evaluation state for a batch of `cols` samples: the network's
  // activations and dense workspaces (pre-activations, derivatives, deltas)
  // plus the scratch of the dense-only derivatives.
  struct Cache {
    Network::Cache net;
    // deriv[i] = f'_i(v_i) (1-based like the layers): scratch of the
    // per-column, Jacobian and curvature kernels.
    std::vector<Eigen::MatrixXd> deriv;
    std::vector<Eigen::MatrixXd> z_squared;  // diagonal-GGN scratch
    // Jacobian scratch: sens[i] = d out / d v_i for one sample (outputs x
    // width of layer i).
    std::vector<RowMatrixXd> sens;
    // Resizes every buffer for `cols` samples; a no-op when the size is
    // unchanged.
    void Resize(const Mlp& mlp, int cols);
    int cols() const { return net.cols(); }
    const Eigen::MatrixXd& output() const { return net.output(); }
    // For a model that adds its own terms to a linear output layer's result
    // (the state-space RNN's linear part); the kernels' cached derivatives do
    // not read a linear layer's output.
    Eigen::MatrixXd& mutable_output() { return net.activation.back(); }
    Eigen::MatrixXd& input() { return net.input(); }
  };

  Mlp() = default;
  explicit Mlp(const MlpSpec& spec);  // spec must satisfy ValidateMlpSpec

  const MlpSpec& spec() const { return spec_; }
  int inputs() const { return spec_.inputs; }
  int outputs() const { return spec_.outputs; }
  int num_params() const { return num_params_; }
  const std::vector<Layer>& layers() const { return layers_; }
  // The dense layers only: without the linear term's L.
  const Network& network() const { return network_; }
  // L as a bias-free block over the inputs (weight_offset = the network's
  // parameter count), or nullptr without a linear term.
  const Layer* linear() const { return spec_.linear ? &linear_ : nullptr; }

  // Glorot-normal weights, A_ij ~ N(0, sigma0^2 * 2 / (in + out)); zero biases;
  // L = 0.
  void Initialize(double sigma0, Rng* rng, double* theta) const;

  // Forward pass over all columns of `in` (inputs x B), through the Network;
  // the output is cache->output().
  void Forward(const double* theta, const Eigen::Ref<const Eigen::MatrixXd>& in,
               Cache* cache) const;
  // Partial forward pass for block methods: recomputes layers `layer` (0-based)
  // and above from the cached input of that layer,
  // cache->net.activation[layer], which
  // must be current (e.g. from a previous Forward with the same lower layers).
  void ForwardFrom(const double* theta, int layer, Cache* cache) const;
  // Partial backward pass: the deltas of the top layers down to `layer`
  // (0-based) only, and grad += dL/dtheta of that layer's parameters (its
  // weights and biases, at their offsets in a full-length grad). After a
  // forward pass on the same cache. The linear term's L is not a layer: block
  // methods refuse linear models.
  void BackwardToLayer(const double* theta,
                       const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                       int layer, Cache* cache, double* grad) const;
  // Forward pass of column `col` only; its input must already be in
  // cache->input().col(col).
  void ForwardColumn(const double* theta, int col, Cache* cache) const;

  // Backward pass over the whole batch for the loss gradient d_out =
  // dL/d(output) (outputs x B): grad += dL/dtheta (grad has num_params entries)
  // and, when d_in is not null, *d_in = dL/d(input) (inputs x B). Requires a
  // preceding Forward on the same cache.
  void Backward(const double* theta,
                const Eigen::Ref<const Eigen::MatrixXd>& d_out, Cache* cache,
                double* grad, Eigen::MatrixXd* d_in) const;
  // Backward pass of one column, for BPTT: stores the deltas of column `col` in
  // the cache and writes dL/d(input) of that column to d_in (inputs entries).
  // Parameter gradients are collected afterwards for all columns at once by
  // AccumulateGradient.
  void BackwardColumn(const double* theta, int col, const double* d_out,
                      Cache* cache, double* d_in) const;
  // grad += sum over columns of the parameter gradient implied by the stored
  // deltas.
  void AccumulateGradient(const Cache& cache, double* grad) const;

  // Jacobians of the output of column `col` (after Forward/ForwardColumn) with
  // respect to the parameters (outputs x num_params, overwritten) and to the
  // inputs (outputs x inputs). Either target may have zero columns to skip it.
  void Jacobian(const double* theta, int col, Cache* cache,
                Eigen::Ref<RowMatrixXd> d_theta,
                Eigen::Ref<RowMatrixXd> d_in) const {
    Jacobian(theta, col, cache, &cache->sens, d_theta, d_in);
  }
  // The same with the per-sample scratch `sens` (sized by Cache::Resize's
  // rule; resized here when it is not) in place of cache->sens, so that two
  // threads can take the Jacobians of different columns of one cache.
  void Jacobian(const double* theta, int col, Cache* cache,
                std::vector<RowMatrixXd>* sens, Eigen::Ref<RowMatrixXd> d_theta,
                Eigen::Ref<RowMatrixXd> d_in) const;

  // Diagonal generalized Gauss-Newton: diag += sum_t sum_o (sqrt_curv(o,t) d
  // out_o(t)/dtheta)^2, where sqrt_curv holds sqrt(l'') per output and sample
  // (outputs x B). After Forward.
  void AccumulateDiagGgn(const double* theta,
                         const Eigen::Ref<const Eigen::MatrixXd>& sqrt_curv,
                         Cache* cache, double* diag) const;

  // Variance of each output under independent parameter variances var (a
  // diagonal covariance, num_params entries), to first order: out(o, t) =
  // sum_k (d out_o(t) / d theta_k)^2 var_k (outputs x B). After Forward.
  void OutputVariance(const double* theta, const double* var, Cache* cache,
                      Eigen::MatrixXd* out) const;

 private:
  // out += L in for the columns [begin, begin + cols) of the cache.
  void AddLinear(const double* theta, int begin, int cols, Cache* cache) const;
  // Activation derivatives and squared inputs of every layer, after Forward.
  void PrepareSquaredDeltas(Cache* cache) const;
  // cache->delta[i] = squared per-sample Jacobian of output o with respect to
  // layer i's pre-activations, each sample's seed scaled by scale[t] (nullptr:
  // 1). After PrepareSquaredDeltas.
  void SquaredDeltas(const double* theta, int o, const double* scale,
                     Cache* cache) const;

  MlpSpec spec_;
  Network network_;
  std::vector<Layer> layers_;  // network_'s layers, described
  Layer linear_;               // L, when spec_.linear

  int num_params_ = 0;
};

// Starts a linear-term model (spec.linear) at the least-squares linear fit of
// y (outputs x N) on x (inputs x N): L and the output layer's biases (an
// intercept only when the layer has biases) are the minimum-norm solution, and
// the output layer's weights are zero, so the network adds nothing until
// training moves them. The other layers keep their values. InvalidArgument
// when the fit is not finite.
absl::Status FitLinearTerm(const Mlp& mlp, const Eigen::MatrixXd& x,
                           const Eigen::MatrixXd& y, double* theta);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_MLP_H_
