// State-space recurrent network x_{k+1} = f_x(x_k, u_k), y_k = f_y(x_k, u_k)
// (Bemporad eq. 1-2), with MLPs f_x (linear output) and f_y, optional direct
// feedthrough of u into f_y, and an initial state that is either a free
// variable per training trace, an encoder MLP of past data (eq. 6), or zero.
//
// Linear-plus-neural (spec.linear): x_{k+1} = A x_k + B u_k + f_x(x_k, u_k),
// y_k = C x_k + D u_k + f_y(x_k, u_k). [A B] and [C D] are stored column-major
// right after theta_x and theta_y, so each forms one block with its network:
//
// Parameter vector: [x0 block | encoder | theta_x [A B] | theta_y [C D]],
// matching the unknown ordering p = [p_x0; p_theta_x; p_theta_y] of the
// Gauss-Newton rows (ALGORITHMS.md §2.3).
//
// f_x, f_y and the encoder use Mlp's per-column kernels (ForwardColumn,
// BackwardColumn, Jacobian) rather than Network's batched layers: they are tiny
// networks evaluated one sample at a time inside the time recursion, where a
// virtual call and a matrix product per layer and step would cost more than the
// arithmetic.
//
// Immutable after construction and safe to share between threads; per-trace
// state lives in a Tape owned by the caller.
#ifndef SPARROW_CORE_MODELS_STATE_SPACE_RNN_H_
#define SPARROW_CORE_MODELS_STATE_SPACE_RNN_H_

#include <algorithm>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/models/mlp.h"
#include "core/util/random.h"

namespace sparrow::core {

enum class InitialState {
  kFree,     // one free x0 per training trace
  kEncoder,  // x0 = f_x0([y(s-1)..y(s-na); u(s-1)..u(s-nb)]), s = max(na, nb)
  kZero,     // x0 = 0
};

struct EncoderSpec {
  std::vector<int> hidden;
  int past_outputs = 0;  // n_a
  int past_inputs = 0;   // n_b
};

struct StateSpaceRnnSpec {
  int nx = 0;
  int nu = 0;
  int ny = 0;
  std::vector<int> fx_hidden;
  std::vector<int> fy_hidden;
  Activation activation = Activation::kTanh;
  Activation output_activation = Activation::kLinear;
  bool feedthrough = true;
  InitialState initial_state = InitialState::kFree;
  int num_traces = 1;  // number of free x0 vectors (kFree only)
  EncoderSpec encoder;
  // Linear terms A x + B u beside f_x and C x + D u beside f_y (D only with
  // feedthrough). Needs a linear output activation.
  bool linear = false;
};

// Checks sizes (nx and the encoder's width at most kMaxLayerWidth and, unless
// limit_params is false, at most kMaxNetworkParams parameters); `name`
// prefixes the message.
absl::Status ValidateStateSpaceRnnSpec(const StateSpaceRnnSpec& spec,
                                       absl::string_view name,
                                       bool limit_params = true);

// x0 (or encoder), fx and fy parameters, counted in 64 bits.
int64_t CountStateSpaceRnnParameters(const StateSpaceRnnSpec& spec);

// A named slice of a parameter vector.
struct ParamBlock {
  std::string name;
  int offset = 0;
  int size = 0;
};

class StateSpaceRnn {
 public:
  // The state of one OutputJacobianSteps pass, row-major (see
  // RowCombination): the state sensitivities M = [m_x0 | m_theta] (nx rows;
  // m_x0 spans the n0 columns from col0, m_theta the f_x block with [A B]),
  // the current output rows, and the networks' Jacobian scratch.
  struct Sensitivities {
    RowMatrixXd jac_fx_theta, jac_fx_in, jac_fy_theta, jac_fy_in, m_x0, m_theta,
        tmp, jac;
    std::vector<RowMatrixXd> fx_scratch, fy_scratch;
    int n0 = 0;
    int col0 = 0;
  };
  // Simulation record of one trace: x.col(k) is the state at step k;
  // fx/fy/encoder caches hold the MLP activations of every step for
  // backpropagation and Jacobians.
  struct Tape {
    Mlp::Cache fx, fy, encoder;
    Eigen::MatrixXd x;
    Eigen::VectorXd grad_x, grad_in_fx, grad_in_fy;
    Sensitivities sens;  // OutputJacobians scratch
    int steps = 0;
    int start = 0;
    // Predictions for samples start..start+steps-1 (ny x steps).
    const Eigen::MatrixXd& outputs() const { return fy.output(); }
  };

  StateSpaceRnn() = default;
  explicit StateSpaceRnn(const StateSpaceRnnSpec& spec);  // spec must be valid

  const StateSpaceRnnSpec& spec() const { return spec_; }
  int num_params() const { return num_params_; }
  const std::vector<ParamBlock>& blocks() const { return blocks_; }
  const Mlp& fx() const { return fx_; }
  const Mlp& fy() const { return fy_; }
  const Mlp& encoder() const { return encoder_; }
  int x0_offset() const { return x0_offset_; }
  int x0_size() const {
    return x0_size_;
  }  // nx * num_traces (kFree), encoder params, or 0
  int fx_offset() const { return fx_offset_; }
  int fy_offset() const { return fy_offset_; }
  // [A B] (nx x (nx + nu)) and [C D] (ny x fy inputs), column-major; -1
  // without spec.linear.
  int ab_offset() const { return ab_offset_; }
  int cd_offset() const { return cd_offset_; }
  // Samples at the start of every trace that only feed the encoder (max(na,
  // nb); 0 otherwise).
  int warmup() const;

  // x0 = 0 and biases 0; Glorot-normal weights scaled by sigma0 (Bemporad Sec.
  // 5). With spec.linear, A, B, C, D and the output layers of f_x, f_y and
  // the encoder are 0 (an encoder starts at x0 = 0): the caller sets the
  // linear part, and training starts at that linear model.
  void Initialize(double sigma0, Rng* rng, double* theta) const;

  // Simulates training trace `trace` (u: nu x N, y: ny x N; y is read only by
  // the encoder) for at most max_steps steps (-1: to the end of the trace).
  void Simulate(const double* theta, const Eigen::MatrixXd& u,
                const Eigen::MatrixXd& y, int trace, Tape* tape,
                int max_steps = -1) const;
  // Simulates from an explicit initial state x0 at sample `start` (evaluation
  // on new data, and truncated-BPTT windows) for at most max_steps steps.
  void SimulateFrom(const double* theta,
                    const Eigen::Ref<const Eigen::VectorXd>& x0,
                    const Eigen::MatrixXd& u, int start, Tape* tape,
                    int max_steps = -1) const;

  // Simulate in chunks of `chunk` steps, calling keep_going(end) after the
  // steps [0, end) are simulated and stopping early when it returns false (a
  // line search abandons a trial whose loss already exceeds its bound).
  // Returns whether the whole trace was simulated; after an early stop only
  // the first `end` steps of the tape are valid.
  template <typename KeepGoing>
  bool SimulateWhile(const double* theta, const Eigen::MatrixXd& u,
                     const Eigen::MatrixXd& y, int trace, Tape* tape, int chunk,
                     KeepGoing&& keep_going) const;

  // BPTT after Simulate: grad += d/dtheta sum_k <d_out(:,k), yhat_k>, where
  // d_out = dL/dyhat (ny x steps). When x0_grad is not null it receives dL/dx0
  // (nx) and no x0/encoder gradient is added to grad (used after SimulateFrom).
  void Backward(const double* theta,
                const Eigen::Ref<const Eigen::MatrixXd>& d_out, int trace,
                Tape* tape, double* grad,
                Eigen::VectorXd* x0_grad = nullptr) const;

  // Output sensitivities by forward recursion (Bemporad eq. 8-9): calls
  // visit(k, J) with J = d yhat_k / d theta (ny x num_params, a RowMatrixXd)
  // for k = 0..steps-1, after Simulate.
  template <typename Visitor>
  void OutputJacobians(const double* theta, int trace, Tape* tape,
                       Visitor&& visit) const {
    OutputJacobianSteps(theta, trace, tape, 0, tape->steps, &tape->sens, visit);
  }
  // The same for steps [begin, end) only, with the scratch s, so that two
  // threads can build the rows of two parts of one trace:
  //  - begin == 0 starts from the trace's initial state. When end < steps, s
  //    ends holding M_end, the sensitivities of x_end (see EmbedSensitivities).
  //  - begin > 0 starts from a free virtual initial state at x_begin: the rows
  //    J' have num_params() + nx columns, the true x0 (encoder) columns stay 0
  //    and the last nx are d yhat_k / d x_begin. The true rows are then
  //    J = J'[:, :n] + J'[:, n:] E with E = EmbedSensitivities(M_begin): the
  //    recursion (Bemporad eq. 9) is linear in M.
  template <typename Visitor>
  void OutputJacobianSteps(const double* theta, int trace, Tape* tape,
                           int begin, int end, Sensitivities* s,
                           Visitor&& visit) const;
  // e (nx x num_params) = the state sensitivities M held by s (after a pass
  // from begin == 0), at their parameter columns, zero elsewhere.
  void EmbedSensitivities(const Sensitivities& s, Eigen::MatrixXd* e) const;

 private:
  // Sizes the tape for `steps` steps from sample `start`.
  void Reserve(int start, int steps, Tape* tape) const;
  // Simulates steps [begin, end) of a reserved tape whose x.col(begin) is set.
  void Run(const double* theta, const Eigen::MatrixXd& u, Tape* tape, int begin,
           int end) const;
  // Sizes s for a pass and sets M to its start: M_0 of the trace, or (virtual)
  // the identity of a free x_begin in the nx columns after the parameters.
  void StartSensitivities(const double* theta, int trace, Tape* tape,
                          bool virtual_x0, Sensitivities* s) const;
  void InitialStateOf(const double* theta, const Eigen::MatrixXd& u,
                      const Eigen::MatrixXd& y, int trace, Tape* tape) const;

  StateSpaceRnnSpec spec_;
  Mlp fx_, fy_, encoder_;
  std::vector<ParamBlock> blocks_;
  int num_params_ = 0;
  int x0_offset_ = 0, x0_size_ = 0, fx_offset_ = 0, fy_offset_ = 0;
  int ab_offset_ = -1, cd_offset_ = -1, n_ab_ = 0, n_cd_ = 0;
};

template <typename KeepGoing>
bool StateSpaceRnn::SimulateWhile(const double* theta, const Eigen::MatrixXd& u,
                                  const Eigen::MatrixXd& y, int trace, Tape* t,
                                  int chunk, KeepGoing&& keep_going) const {
  Reserve(warmup(), static_cast<int>(u.cols()) - warmup(), t);
  InitialStateOf(theta, u, y, trace, t);
  for (int begin = 0; begin < t->steps; begin += chunk) {
    const int end = std::min(t->steps, begin + chunk);
    Run(theta, u, t, begin, end);
    if (!keep_going(end)) return false;
  }
  return true;
}

namespace internal {

// out[c] (+)= sum_j coef[j] m[j * cols + c] for c < cols: a row of coef * M for
// row-major M. The sensitivity matrices are a few rows by tens of columns,
// where Eigen's GEMM path costs more than the arithmetic (packing dominates).
// A packet of columns sums all its terms in one register and is stored once:
// the first product rounded (or out), then one multiply-add per term in the
// order j = 0, 1, .... The last columns, fewer than a packet, go through the
// same packet operations on zero-padded copies, so every column gets the same
// arithmetic whatever the compiler and the CPU do with scalar expressions.
template <bool kAccumulate>
inline void RowCombination(const double* coef, int rows, const double* m,
                           int cols, double* __restrict out) {
  namespace ei = Eigen::internal;
  using Packet = ei::packet_traits<double>::type;
  constexpr int kSize = ei::packet_traits<double>::size;
  const int first = kAccumulate ? 0 : 1;
  int c = 0;
  for (; c + kSize <= cols; c += kSize) {
    Packet acc = kAccumulate ? ei::ploadu<Packet>(out + c)
                             : ei::pmul(ei::pset1<Packet>(coef[0]),
                                        ei::ploadu<Packet>(m + c));
    for (int j = first; j < rows; ++j) {
      acc = ei::pmadd(
          ei::pset1<Packet>(coef[j]),
          ei::ploadu<Packet>(m + static_cast<Eigen::Index>(j) * cols + c), acc);
    }
    ei::pstoreu(out + c, acc);
  }
  const int rest = cols - c;
  if (rest == 0 || (!kAccumulate && rows == 0)) return;
  double row[kSize] = {};
  double sum[kSize] = {};
  auto padded = [&](int j) {
    std::copy_n(m + static_cast<Eigen::Index>(j) * cols + c, rest, row);
    return ei::ploadu<Packet>(row);
  };
  Packet acc;
  if (kAccumulate) {
    std::copy_n(out + c, rest, sum);
    acc = ei::ploadu<Packet>(sum);
  } else {
    acc = ei::pmul(ei::pset1<Packet>(coef[0]), padded(0));
  }
  for (int j = first; j < rows; ++j) {
    acc = ei::pmadd(ei::pset1<Packet>(coef[j]), padded(j), acc);
  }
  ei::pstoreu(sum, acc);
  std::copy_n(sum, rest, out + c);
}

// jac(r, c) += l(r, c) for c < cols: the linear term's input Jacobian (l is
// column-major with `rows` rows) added to the network's.
inline void AddLinearJacobian(const double* l, int rows, int cols,
                              RowMatrixXd* jac) {
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) (*jac)(r, c) += l[c * rows + r];
  }
}

}  // namespace internal

template <typename Visitor>
void StateSpaceRnn::OutputJacobianSteps(const double* theta, int trace, Tape* t,
                                        int begin, int end, Sensitivities* s,
                                        Visitor&& visit) const {
  const int nx = spec_.nx;
  const int ny = spec_.ny;
  const int n_fx = fx_.num_params();
  const int n_fy = fy_.num_params();
  const int n_fx_in = fx_.inputs();
  const int n_fy_in = fy_.inputs();
  // Columns of the f_x block, [A B] included: M_theta spans them all.
  const int n_fxl = n_fx + n_ab_;
  StartSensitivities(theta, trace, t, begin > 0, s);
  const int n0 = s->n0;
  const int col0 = s->col0;
  const Eigen::Index cols = s->jac.cols();
  for (int k = begin; k < end; ++k) {
    fy_.Jacobian(theta + fy_offset_, k, &t->fy, &s->fy_scratch, s->jac_fy_theta,
                 s->jac_fy_in);
    const double* in_y = t->fy.input().data() + k * n_fy_in;
    if (spec_.linear)
      internal::AddLinearJacobian(theta + cd_offset_, ny, nx, &s->jac_fy_in);
    // Bemporad eq. (8): d yhat_k = J_x M_k + [0 .. d f_y / d theta_y].
    for (int i = 0; i < ny; ++i) {
      const double* jx = s->jac_fy_in.data() + i * n_fy_in;  // first nx
      double* row = s->jac.data() + static_cast<Eigen::Index>(i) * cols;
      if (n0 > 0) {
        internal::RowCombination<false>(jx, nx, s->m_x0.data(), n0, row + col0);
      }
      internal::RowCombination<false>(jx, nx, s->m_theta.data(), n_fxl,
                                      row + fx_offset_);
      const double* phi_y = s->jac_fy_theta.data() + i * n_fy;
      std::copy(phi_y, phi_y + n_fy, row + fy_offset_);
      // d y_i / d CD(i, c) = in_y(c); the other rows' entries stay 0.
      for (int c = 0; c < n_cd_ / ny; ++c)
        row[cd_offset_ + c * ny + i] = in_y[c];
    }
    visit(k, static_cast<const RowMatrixXd&>(s->jac));
    if (k + 1 == t->steps) break;
    // Bemporad eq. (9): M_{k+1,theta} = F_k M_{k,theta} + Phi_k, M_{k+1,x} =
    // F_k M_{k,x}. Phi_k is in jac_fx_theta: F_k M is added into it and the
    // buffers are swapped.
    fx_.Jacobian(theta + fx_offset_, k, &t->fx, &s->fx_scratch,
                 s->jac_fx_theta.leftCols(n_fx), s->jac_fx_in);
    if (spec_.linear) {
      // d x+_r / d AB(r, c) = in_x(c); F_k gains A.
      const double* in_x = t->fx.input().data() + k * n_fx_in;
      s->jac_fx_theta.rightCols(n_ab_).setZero();
      for (int r = 0; r < nx; ++r) {
        for (int c = 0; c < n_fx_in; ++c) {
          s->jac_fx_theta(r, n_fx + c * nx + r) = in_x[c];
        }
      }
      internal::AddLinearJacobian(theta + ab_offset_, nx, nx, &s->jac_fx_in);
    }
    for (int r = 0; r < nx; ++r) {
      const double* f = s->jac_fx_in.data() + r * n_fx_in;  // first nx
      internal::RowCombination<true>(
          f, nx, s->m_theta.data(), n_fxl,
          s->jac_fx_theta.data() + static_cast<Eigen::Index>(r) * n_fxl);
      if (n0 > 0) {
        internal::RowCombination<false>(
            f, nx, s->m_x0.data(), n0,
            s->tmp.data() + static_cast<Eigen::Index>(r) * n0);
      }
    }
    s->m_theta.swap(s->jac_fx_theta);
    if (n0 > 0) s->m_x0.swap(s->tmp);
  }
}

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_STATE_SPACE_RNN_H_
