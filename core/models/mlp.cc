#include "core/models/mlp.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "Eigen/QR"
#include "absl/strings/str_cat.h"

namespace sparrow::core {
namespace {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

// Mlp's 1-based view of the network cache: Z(c, 0) is the input, Z(c, i) and
// V(c, i) the post- and pre-activations of layer i and Delta(c, i) = dL/dv_i
// (DenseLayer's workspace buffers); Deriv(c, i) = f'_i(v_i), Mlp's own scratch.
MatrixXd& Z(Mlp::Cache* c, int i) { return c->net.activation[i]; }
MatrixXd& Buffer(Mlp::Cache* c, int i, DenseLayer::Buffer b) {
  return c->net.work[i - 1].buffers[b];
}
MatrixXd& V(Mlp::Cache* c, int i) {
  return Buffer(c, i, DenseLayer::kPreActivation);
}
MatrixXd& Deriv(Mlp::Cache* c, int i) { return c->deriv[i]; }
MatrixXd& Delta(Mlp::Cache* c, int i) {
  return Buffer(c, i, DenseLayer::kDelta);
}

// dst[k * out + q] = z[k] s[q] for k < in, q < out. Layers a few units wide
// are the common case of the per-step Jacobians, where a loop over q of
// unknown length costs more in overhead than its few products: widths up to 8
// get loops of fixed length (kOut = out), which the compiler unrolls; kOut = 0
// takes the width from `out`.
template <int kOut>
void OuterProductOf(const double* z, int in, const double* s, int out,
                    double* __restrict dst) {
  const int width = kOut > 0 ? kOut : out;
  for (int k = 0; k < in; ++k) {
    const double zk = z[k];
    double* dk = dst + static_cast<Eigen::Index>(k) * width;
    for (int q = 0; q < width; ++q) dk[q] = zk * s[q];
  }
}

void OuterProduct(const double* z, int in, const double* s, int out,
                  double* __restrict dst) {
  switch (out) {
    case 1:
      return OuterProductOf<1>(z, in, s, out, dst);
    case 2:
      return OuterProductOf<2>(z, in, s, out, dst);
    case 3:
      return OuterProductOf<3>(z, in, s, out, dst);
    case 4:
      return OuterProductOf<4>(z, in, s, out, dst);
    case 5:
      return OuterProductOf<5>(z, in, s, out, dst);
    case 6:
      return OuterProductOf<6>(z, in, s, out, dst);
    case 7:
      return OuterProductOf<7>(z, in, s, out, dst);
    case 8:
      return OuterProductOf<8>(z, in, s, out, dst);
    default:
      return OuterProductOf<0>(z, in, s, out, dst);
  }
}

Map<const MatrixXd> Weights(const double* theta, const Mlp::Layer& l) {
  return Map<const MatrixXd>(theta + l.weight_offset, l.out, l.in);
}

// out[k] = sum_q w(q, k) in[q] for a column-major rows x cols matrix w, times
// scale[k] when scale is given; kAccumulate (only used without a scale) adds
// the sum to out[k] instead.
// Plain loops for the reason ForwardColumn has them: at a few units Eigen's
// matrix-vector dispatch costs more than the arithmetic. Column k is
// contiguous, so each output is one dot product summed in a register (over q
// in order, as the scalar loop would) and stored once; four outputs at a time
// keep four independent sums in flight for the wider layers.
template <bool kAccumulate>
void TransposeTimes(const double* w, int rows, int cols, const double* in,
                    const double* scale, double* out) {
  auto finish = [&](int k, double acc) {
    out[k] = scale != nullptr ? acc * scale[k] : acc;
  };
  int k = 0;
  for (; k + 4 <= cols; k += 4) {
    const double* wk = w + static_cast<Eigen::Index>(k) * rows;
    double acc[4];
    for (int j = 0; j < 4; ++j) acc[j] = kAccumulate ? out[k + j] : 0.0;
    for (int q = 0; q < rows; ++q) {
      for (int j = 0; j < 4; ++j) acc[j] += wk[j * rows + q] * in[q];
    }
    for (int j = 0; j < 4; ++j) finish(k + j, acc[j]);
  }
  for (; k < cols; ++k) {
    const double* wk = w + static_cast<Eigen::Index>(k) * rows;
    double acc = kAccumulate ? out[k] : 0.0;
    for (int q = 0; q < rows; ++q) acc += wk[q] * in[q];
    finish(k, acc);
  }
}

}  // namespace

absl::Status ValidateMlpSpec(const MlpSpec& spec, absl::string_view name,
                             bool limit_params) {
  if (spec.inputs <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": the number of inputs is ", spec.inputs,
                     "; it must be positive"));
  }
  if (spec.outputs <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": the number of outputs is ", spec.outputs,
                     "; it must be positive"));
  }
  for (size_t i = 0; i < spec.hidden.size(); ++i) {
    if (spec.hidden[i] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ".hidden[", i, "] is ", spec.hidden[i],
                       "; layer sizes must be positive"));
    }
    if (spec.hidden[i] > kMaxLayerWidth) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ".hidden[", i, "] is ", spec.hidden[i],
                       "; layer sizes must be at most ", kMaxLayerWidth));
    }
  }
  if (spec.linear && spec.output_activation != Activation::kLinear) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": a linear term (linear: true) needs a linear output layer"));
  }
  if (spec.linear && spec.precision != Precision::kFloat64) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": a linear term (linear: true) needs float64 products"));
  }
  const int64_t params = CountMlpParameters(spec);
  if (limit_params && params > kMaxNetworkParams) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " would have ", params, " parameters (", spec.inputs,
        " inputs); one network may have at most ", kMaxNetworkParams));
  }
  return absl::OkStatus();
}

int64_t CountMlpParameters(const MlpSpec& spec) {
  const int64_t bias = spec.bias ? 1 : 0;
  int64_t count = 0;
  int64_t fan_in = spec.inputs;
  for (int width : spec.hidden) {
    count += (fan_in + bias) * width;
    fan_in = width;
  }
  count += (fan_in + bias) * spec.outputs;
  if (spec.linear) count += int64_t{spec.inputs} * spec.outputs;
  return count;
}

Mlp::Mlp(const MlpSpec& spec) : spec_(spec) {
  std::vector<std::shared_ptr<const core::Layer>> layers;
  int in = spec.inputs;
  const int num_layers = static_cast<int>(spec.hidden.size()) + 1;
  for (int i = 0; i < num_layers; ++i) {
    const bool last = i + 1 == num_layers;
    const int out = last ? spec.outputs : spec.hidden[i];
    layers.push_back(std::make_shared<DenseLayer>(
        in, out, last ? spec.output_activation : spec.hidden_activation,
        spec.bias, spec.init, spec.precision));
    in = out;
  }
  network_ = Network(std::move(layers));
  layers_ = DenseBlocks(network_);
  num_params_ = network_.num_params();
  if (spec.linear) {
    linear_.in = spec.inputs;
    linear_.out = spec.outputs;
    linear_.weight_offset = num_params_;
    linear_.bias_offset = -1;
    num_params_ += linear_.num_params();
  }
}

void Mlp::Cache::Resize(const Mlp& mlp, int cols) {
  const size_t n = mlp.layers_.size() + 1;
  if (z_squared.size() == n && this->cols() == cols) return;
  net.Resize(mlp.network_, cols);
  sens.resize(n);
  deriv.resize(n);
  z_squared.resize(n);
  z_squared[0].resize(mlp.inputs(), cols);
  for (size_t i = 1; i < n; ++i) {
    const int out = mlp.layers_[i - 1].out;
    deriv[i].resize(out, cols);
    z_squared[i].resize(out, cols);
    sens[i].resize(mlp.outputs(), out);
  }
}

void Mlp::Initialize(double sigma0, Rng* rng, double* theta) const {
  network_.Initialize(sigma0, rng, theta);
  if (spec_.linear) {
    std::fill_n(theta + linear_.weight_offset, linear_.num_params(), 0.0);
  }
}

void Mlp::AddLinear(const double* theta, int begin, int cols, Cache* c) const {
  if (!spec_.linear) return;
  Z(c, static_cast<int>(layers_.size())).middleCols(begin, cols).noalias() +=
      Weights(theta, linear_) * Z(c, 0).middleCols(begin, cols);
}

void Mlp::Forward(const double* theta, const Eigen::Ref<const MatrixXd>& in,
                  Cache* c) const {
  c->Resize(*this, static_cast<int>(in.cols()));
  network_.Forward(theta, in, &c->net);
  AddLinear(theta, 0, c->cols(), c);
}

void Mlp::ForwardFrom(const double* theta, int layer, Cache* c) const {
  network_.ForwardLayers(theta, layer, network_.num_layers(), &c->net);
  AddLinear(theta, 0, c->cols(), c);
}

void Mlp::BackwardToLayer(const double* theta,
                          const Eigen::Ref<const MatrixXd>& d_out, int layer,
                          Cache* c, double* grad) const {
  network_.BackwardToLayer(theta, d_out, layer, &c->net);
  network_.LayerGradient(layer, c->net, grad);
}

void Mlp::ForwardColumn(const double* theta, int col, Cache* c) const {
  // Plain loops: a simulation calls this once per step on layers a few units
  // wide, where Eigen's matrix-vector dispatch costs more than the arithmetic.
  // Each output is summed in a register and stored once (accumulating into
  // memory column by column stalls on store forwarding at these sizes).
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    const double* z = Z(c, i).col(col).data();
    double* v = V(c, i + 1).col(col).data();
    const double* a = theta + l.weight_offset;
    const double* b = l.bias_offset >= 0 ? theta + l.bias_offset : nullptr;
    int r = 0;
    // Four outputs at a time in one vector register; each output still sums
    // b, then k = 0, 1, ... in order, so the result is the scalar loop's.
    for (; r + 4 <= l.out; r += 4) {
      double acc[4];
      for (int q = 0; q < 4; ++q) acc[q] = b != nullptr ? b[r + q] : 0.0;
      for (int k = 0; k < l.in; ++k) {
        const double* ak = a + k * l.out + r;
        for (int q = 0; q < 4; ++q) acc[q] += ak[q] * z[k];
      }
      for (int q = 0; q < 4; ++q) v[r + q] = acc[q];
    }
    for (; r < l.out; ++r) {
      double acc = b != nullptr ? b[r] : 0.0;
      for (int k = 0; k < l.in; ++k) acc += a[k * l.out + r] * z[k];
      v[r] = acc;
    }
    ApplyActivation(l.activation, v, Z(c, i + 1).col(col).data(), l.out);
  }
  if (spec_.linear) {
    // out(r) += sum_k L(r, k) x_k, in that order.
    const double* x = Z(c, 0).col(col).data();
    double* out = Z(c, static_cast<int>(layers_.size())).col(col).data();
    const double* a = theta + linear_.weight_offset;
    for (int r = 0; r < linear_.out; ++r) {
      double acc = out[r];
      for (int k = 0; k < linear_.in; ++k) acc += a[k * linear_.out + r] * x[k];
      out[r] = acc;
    }
  }
}

void Mlp::Backward(const double* theta, const Eigen::Ref<const MatrixXd>& d_out,
                   Cache* c, double* grad, MatrixXd* d_in) const {
  network_.Backward(theta, d_out, &c->net, d_in);
  network_.Gradient(c->net, grad);
  if (!spec_.linear) return;
  Map<MatrixXd>(grad + linear_.weight_offset, linear_.out, linear_.in)
      .noalias() += d_out * Z(c, 0).transpose();
  if (d_in != nullptr)
    d_in->noalias() += Weights(theta, linear_).transpose() * d_out;
}

void Mlp::BackwardColumn(const double* theta, int col, const double* d_out,
                         Cache* c, double* d_in) const {
  const int n = static_cast<int>(layers_.size());
  for (int i = n; i >= 1; --i) {
    const Layer& l = layers_[i - 1];
    auto deriv = Deriv(c, i).col(col);
    ActivationDerivative(l.activation, V(c, i).col(col), Z(c, i).col(col),
                         deriv);
    const double* slope = deriv.data();
    double* delta = Delta(c, i).col(col).data();
    if (i == n) {
      for (int r = 0; r < l.out; ++r) delta[r] = d_out[r] * slope[r];
    } else {
      const Layer& next = layers_[i];
      TransposeTimes<false>(theta + next.weight_offset, next.out, l.out,
                            Delta(c, i + 1).col(col).data(), slope, delta);
    }
  }
  const Layer& first = layers_[0];
  TransposeTimes<false>(theta + first.weight_offset, first.out, first.in,
                        Delta(c, 1).col(col).data(), nullptr, d_in);
  if (spec_.linear) {
    TransposeTimes<true>(theta + linear_.weight_offset, linear_.out, linear_.in,
                         d_out, nullptr, d_in);
  }
}

void Mlp::AccumulateGradient(const Cache& c, double* grad) const {
  network_.Gradient(c.net, grad);
  if (!spec_.linear) return;
  // The output layer is linear, so its deltas are dL/d(output).
  const MatrixXd& delta =
      c.net.work[layers_.size() - 1].buffers[DenseLayer::kDelta];
  Map<MatrixXd>(grad + linear_.weight_offset, linear_.out, linear_.in)
      .noalias() += delta * c.net.activation[0].transpose();
}

// Bemporad §2.3 "per-step MLP Jacobians": S_L = diag(phi'(v_L)); for each layer
// d out/d b_i = S_i, d out/d vec A_i = z_{i-1}^T (x) S_i, S_{i-1} = S_i A_i
// diag(f'_{i-1}(v_{i-1})).
void Mlp::Jacobian(const double* theta, int col, Cache* c,
                   std::vector<RowMatrixXd>* sens,
                   Eigen::Ref<RowMatrixXd> d_theta,
                   Eigen::Ref<RowMatrixXd> d_in) const {
  // Plain loops over contiguous rows: every block here is a few rows wide (the
  // Gauss-Newton rows call this once per time step), where Eigen's product
  // dispatch costs more than the arithmetic.
  const int n = static_cast<int>(layers_.size());
  const int m = outputs();
  if (sens->size() != static_cast<size_t>(n + 1)) sens->resize(n + 1);
  for (int i = 1; i <= n; ++i) (*sens)[i].resize(m, layers_[i - 1].out);
  for (int i = n; i >= 1; --i) {
    const Layer& l = layers_[i - 1];
    auto deriv = Deriv(c, i).col(col);
    ActivationDerivative(l.activation, V(c, i).col(col), Z(c, i).col(col),
                         deriv);
    RowMatrixXd& s = (*sens)[i];  // m x l.out
    if (i == n) {
      s.setZero();
      for (int r = 0; r < m; ++r) s(r, r) = deriv(r);
    } else {
      // s = sens[i+1] W_{i+1} diag(f'_i); W_{i+1} is column-major, so both
      // factors of every dot product are contiguous.
      const Layer& next = layers_[i];
      const double* w = theta + next.weight_offset;  // next.out x l.out
      for (int r = 0; r < m; ++r) {
        const double* up =
            (*sens)[i + 1].data() + static_cast<Eigen::Index>(r) * next.out;
        double* sr = s.data() + static_cast<Eigen::Index>(r) * l.out;
        for (int k = 0; k < l.out; ++k) {
          const double* wk = w + static_cast<Eigen::Index>(k) * next.out;
          double acc = 0.0;
          for (int j = 0; j < next.out; ++j) acc += up[j] * wk[j];
          sr[k] = acc * deriv(k);
        }
      }
    }
    if (d_theta.cols() > 0) {
      const double* z_prev = Z(c, i - 1).col(col).data();
      for (int r = 0; r < m; ++r) {
        const double* sr = s.data() + static_cast<Eigen::Index>(r) * l.out;
        double* dst = d_theta.data() + r * d_theta.outerStride();
        // d out_r / d A_i(q, k) = s(r, q) z_{i-1}(k), stored at k * out + q.
        OuterProduct(z_prev, l.in, sr, l.out, dst + l.weight_offset);
        if (l.bias_offset >= 0) {
          double* db = dst + l.bias_offset;
          for (int q = 0; q < l.out; ++q) db[q] = sr[q];
        }
      }
    }
  }
  if (spec_.linear && d_theta.cols() > 0) {
    // d out_r / d L(q, k) = [q == r] x_k.
    const double* x = Z(c, 0).col(col).data();
    for (int r = 0; r < m; ++r) {
      double* dl =
          d_theta.data() + r * d_theta.outerStride() + linear_.weight_offset;
      std::fill_n(dl, linear_.num_params(), 0.0);
      for (int k = 0; k < linear_.in; ++k) dl[k * m + r] = x[k];
    }
  }
  if (d_in.cols() > 0) {
    // d_in = sens[1] A_1 (+ L).
    const Layer& l = layers_[0];
    const double* w = theta + l.weight_offset;
    for (int r = 0; r < m; ++r) {
      const double* sr =
          (*sens)[1].data() + static_cast<Eigen::Index>(r) * l.out;
      double* dst = d_in.data() + r * d_in.outerStride();
      for (int k = 0; k < l.in; ++k) {
        const double* wk = w + static_cast<Eigen::Index>(k) * l.out;
        double acc = 0.0;
        for (int q = 0; q < l.out; ++q) acc += sr[q] * wk[q];
        dst[k] = acc;
      }
      if (spec_.linear) {
        const double* a = theta + linear_.weight_offset;
        for (int k = 0; k < l.in; ++k) dst[k] += a[k * m + r];
      }
    }
  }
}

void Mlp::PrepareSquaredDeltas(Cache* c) const {
  const int n = static_cast<int>(layers_.size());
  for (int i = 1; i <= n; ++i) {
    const Layer& l = layers_[i - 1];
    ActivationDerivative(l.activation, V(c, i), Z(c, i), Deriv(c, i));
    c->z_squared[i - 1] = Z(c, i - 1).array().square();
  }
}

void Mlp::SquaredDeltas(const double* theta, int o, const double* scale,
                        Cache* c) const {
  // Backpropagate the seed e_o (times scale per sample) through the whole
  // batch: the deltas are then the per-sample Jacobian rows of output o with
  // respect to each pre-activation; they are squared in place at the end.
  const int n = static_cast<int>(layers_.size());
  for (int i = n; i >= 1; --i) {
    if (i == n) {
      Delta(c, i).setZero();
      Delta(c, i).row(o) = Deriv(c, i).row(o);
      if (scale != nullptr) {
        Delta(c, i).row(o).array() *=
            Map<const Eigen::RowVectorXd>(scale, Delta(c, i).cols()).array();
      }
    } else {
      Delta(c, i).noalias() =
          Weights(theta, layers_[i]).transpose() * Delta(c, i + 1);
      Delta(c, i).array() *= Deriv(c, i).array();
    }
  }
  for (int i = 1; i <= n; ++i)
    Delta(c, i).array() = Delta(c, i).array().square();
}

void Mlp::AccumulateDiagGgn(const double* theta,
                            const Eigen::Ref<const MatrixXd>& sqrt_curv,
                            Cache* c, double* diag) const {
  PrepareSquaredDeltas(c);
  Eigen::RowVectorXd scale(sqrt_curv.cols());
  for (int o = 0; o < outputs(); ++o) {
    scale = sqrt_curv.row(o);
    SquaredDeltas(theta, o, scale.data(), c);
    // (A o A)^T (Delta o Delta) per layer (ALGORITHMS.md §1.5).
    for (size_t i = 1; i <= layers_.size(); ++i) {
      const Layer& l = layers_[i - 1];
      Map<MatrixXd>(diag + l.weight_offset, l.out, l.in).noalias() +=
          Delta(c, i) * c->z_squared[i - 1].transpose();
      if (l.bias_offset >= 0) {
        Map<VectorXd>(diag + l.bias_offset, l.out) +=
            Delta(c, i).rowwise().sum();
      }
    }
    if (spec_.linear) {
      // d out_o / d L(o, k) = x_k; the output layer's squared delta row o is
      // (sqrt_curv(o, t) f'(v))^2 with f' = 1.
      Map<MatrixXd>(diag + linear_.weight_offset, linear_.out, linear_.in)
          .row(o)
          .noalias() += Delta(c, static_cast<int>(layers_.size())).row(o) *
                        c->z_squared[0].transpose();
    }
  }
}

void Mlp::OutputVariance(const double* theta, const double* var, Cache* c,
                         MatrixXd* out) const {
  out->setZero(outputs(), Z(c, 0).cols());
  PrepareSquaredDeltas(c);
  for (int o = 0; o < outputs(); ++o) {
    SquaredDeltas(theta, o, nullptr, c);
    for (size_t i = 1; i <= layers_.size(); ++i) {
      const Layer& l = layers_[i - 1];
      const Map<const MatrixXd> wvar(var + l.weight_offset, l.out, l.in);
      MatrixXd per_unit = wvar * c->z_squared[i - 1];
      if (l.bias_offset >= 0) {
        per_unit.colwise() += Map<const VectorXd>(var + l.bias_offset, l.out);
      }
      out->row(o) +=
          (Delta(c, i).array() * per_unit.array()).colwise().sum().matrix();
    }
    if (spec_.linear) {
      out->row(o).noalias() += Map<const MatrixXd>(var + linear_.weight_offset,
                                                   linear_.out, linear_.in)
                                   .row(o) *
                               c->z_squared[0];
    }
  }
}

absl::Status FitLinearTerm(const Mlp& mlp, const MatrixXd& x, const MatrixXd& y,
                           double* theta) {
  const Mlp::Layer* linear = mlp.linear();
  if (linear == nullptr) {
    return absl::InvalidArgumentError("the network has no linear term");
  }
  const Mlp::Layer& top = mlp.layers().back();
  const bool intercept = top.bias_offset >= 0;
  // Normal equations of the regressors [x; 1]: (in + 1)^2 memory whatever the
  // number of samples; the complete orthogonal decomposition gives the
  // minimum-norm solution when a regressor is constant or repeated.
  const Eigen::Index in = x.rows(), k = in + (intercept ? 1 : 0);
  MatrixXd gram(k, k), rhs(k, y.rows());
  gram.topLeftCorner(in, in).noalias() = x * x.transpose();
  rhs.topRows(in).noalias() = x * y.transpose();
  if (intercept) {
    gram.col(in).head(in) = x.rowwise().sum();
    gram.row(in).head(in) = gram.col(in).head(in).transpose();
    gram(in, in) = static_cast<double>(x.cols());
    rhs.row(in) = y.rowwise().sum().transpose();
  }
  const MatrixXd coef =
      Eigen::CompleteOrthogonalDecomposition<MatrixXd>(gram).solve(rhs);
  if (!coef.allFinite()) {
    return absl::InvalidArgumentError(
        "the least-squares linear fit of the linear term is not finite; check "
        "the training data for constant or huge columns");
  }
  Map<MatrixXd>(theta + linear->weight_offset, linear->out, linear->in) =
      coef.topRows(in).transpose();
  Map<MatrixXd>(theta + top.weight_offset, top.out, top.in).setZero();
  if (intercept) {
    Map<VectorXd>(theta + top.bias_offset, top.out) = coef.row(in).transpose();
  }
  return absl::OkStatus();
}

}  // namespace sparrow::core
