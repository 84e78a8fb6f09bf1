#include "core/models/state_space_rnn.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

MlpSpec FxSpec(const StateSpaceRnnSpec& s) {
  return MlpSpec{s.nx + s.nu, s.fx_hidden, s.nx, s.activation,
                 Activation::kLinear};
}
MlpSpec FySpec(const StateSpaceRnnSpec& s) {
  return MlpSpec{s.nx + (s.feedthrough ? s.nu : 0), s.fy_hidden, s.ny,
                 s.activation, s.output_activation};
}
MlpSpec EncoderMlpSpec(const StateSpaceRnnSpec& s) {
  return MlpSpec{s.ny * s.encoder.past_outputs + s.nu * s.encoder.past_inputs,
                 s.encoder.hidden, s.nx, s.activation, Activation::kLinear};
}

int FyInputs(const StateSpaceRnnSpec& s) {
  return s.nx + (s.feedthrough ? s.nu : 0);
}

// out += L in for column-major L (rows x cols). Plain loops for the same
// reason as Mlp::ForwardColumn: a few values per simulation step.
void AddLinear(const double* l, int rows, int cols, const double* in,
               double* out) {
  for (int c = 0; c < cols; ++c) {
    const double* lc = l + c * rows;
    for (int r = 0; r < rows; ++r) out[r] += lc[r] * in[c];
  }
}

// Backward through out = L in: d_in += L^T d_out, grad_l += d_out in^T.
void LinearBackward(const double* l, int rows, int cols, const double* d_out,
                    const double* in, double* d_in, double* grad_l) {
  for (int c = 0; c < cols; ++c) {
    const double* lc = l + c * rows;
    double* gc = grad_l + c * rows;
    double acc = 0.0;
    for (int r = 0; r < rows; ++r) {
      acc += lc[r] * d_out[r];
      gc[r] += d_out[r] * in[c];
    }
    d_in[c] += acc;
  }
}

// Zero weights and biases of the network's output layer.
void ZeroOutputLayer(const Mlp& mlp, double* theta) {
  const Mlp::Layer& last = mlp.layers().back();
  std::fill_n(theta + last.weight_offset, last.in * last.out, 0.0);
  if (last.bias_offset >= 0)
    std::fill_n(theta + last.bias_offset, last.out, 0.0);
}

}  // namespace

absl::Status ValidateStateSpaceRnnSpec(const StateSpaceRnnSpec& s,
                                       absl::string_view name,
                                       bool limit_params) {
  if (s.nx <= 0 || s.nx > kMaxLayerWidth) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ".nx is ", s.nx, "; the state dimension must be between 1 and ",
        kMaxLayerWidth));
  }
  if (s.nu <= 0 || s.ny <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        name,
        ": the model needs at least one input and one output column (got ",
        s.nu, " inputs, ", s.ny, " outputs)"));
  }
  SPARROW_RETURN_IF_ERROR(
      ValidateMlpSpec(FxSpec(s), absl::StrCat(name, ".fx"), false));
  SPARROW_RETURN_IF_ERROR(
      ValidateMlpSpec(FySpec(s), absl::StrCat(name, ".fy"), false));
  if (s.linear && s.output_activation != Activation::kLinear) {
    return absl::InvalidArgumentError(absl::StrCat(
        name,
        ".linear adds C x + D u to the output, so the output activation "
        "must be linear (got ",
        ActivationName(s.output_activation),
        ", set or implied by binary cross-entropy); drop linear, or use a "
        "linear output and a regression loss"));
  }
  if (s.initial_state == InitialState::kFree && s.num_traces <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": no training traces"));
  }
  if (s.initial_state == InitialState::kEncoder) {
    const EncoderSpec& e = s.encoder;
    if (e.past_outputs < 0 || e.past_inputs < 0 ||
        e.past_outputs + int64_t{e.past_inputs} == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ".encoder: past_outputs (", e.past_outputs,
                       ") and past_inputs (", e.past_inputs,
                       ") must be non-negative and not both zero"));
    }
    // The encoder's input width, in 64 bits: EncoderMlpSpec's int must not
    // overflow.
    const int64_t width =
        int64_t{s.ny} * e.past_outputs + int64_t{s.nu} * e.past_inputs;
    if (width > kMaxLayerWidth) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ".encoder: past_outputs (", e.past_outputs,
          ") x outputs + past_inputs (", e.past_inputs, ") x inputs is ", width,
          "; the encoder may read at most ", kMaxLayerWidth, " values"));
    }
    SPARROW_RETURN_IF_ERROR(ValidateMlpSpec(
        EncoderMlpSpec(s), absl::StrCat(name, ".encoder"), false));
  }
  const int64_t params = CountStateSpaceRnnParameters(s);
  if (limit_params && params > kMaxNetworkParams) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " would have ", params, " parameters; a model may have at most ",
        kMaxNetworkParams));
  }
  return absl::OkStatus();
}

int64_t CountStateSpaceRnnParameters(const StateSpaceRnnSpec& s) {
  int64_t x0 = 0;
  if (s.initial_state == InitialState::kFree) {
    x0 = int64_t{s.nx} * s.num_traces;
  } else if (s.initial_state == InitialState::kEncoder) {
    x0 = CountMlpParameters(EncoderMlpSpec(s));
  }
  const int64_t linear =
      s.linear ? int64_t{s.nx} * (s.nx + s.nu) + int64_t{s.ny} * FyInputs(s)
               : 0;
  return x0 + CountMlpParameters(FxSpec(s)) + CountMlpParameters(FySpec(s)) +
         linear;
}

StateSpaceRnn::StateSpaceRnn(const StateSpaceRnnSpec& spec)
    : spec_(spec), fx_(FxSpec(spec)), fy_(FySpec(spec)) {
  switch (spec.initial_state) {
    case InitialState::kFree:
      x0_size_ = spec.nx * spec.num_traces;
      blocks_.push_back({"x0", 0, x0_size_});
      break;
    case InitialState::kEncoder:
      encoder_ = Mlp(EncoderMlpSpec(spec));
      x0_size_ = encoder_.num_params();
      blocks_.push_back({"encoder", 0, x0_size_});
      break;
    case InitialState::kZero:
      break;
  }
  if (spec.linear) {
    n_ab_ = spec.nx * (spec.nx + spec.nu);
    n_cd_ = spec.ny * FyInputs(spec);
  }
  fx_offset_ = x0_size_;
  ab_offset_ = spec.linear ? fx_offset_ + fx_.num_params() : -1;
  fy_offset_ = fx_offset_ + fx_.num_params() + n_ab_;
  cd_offset_ = spec.linear ? fy_offset_ + fy_.num_params() : -1;
  num_params_ = fy_offset_ + fy_.num_params() + n_cd_;
  blocks_.push_back({"fx", fx_offset_, fx_.num_params()});
  if (spec.linear) blocks_.push_back({"AB", ab_offset_, n_ab_});
  blocks_.push_back({"fy", fy_offset_, fy_.num_params()});
  if (spec.linear) blocks_.push_back({"CD", cd_offset_, n_cd_});
}

int StateSpaceRnn::warmup() const {
  if (spec_.initial_state != InitialState::kEncoder) return 0;
  return std::max(spec_.encoder.past_outputs, spec_.encoder.past_inputs);
}

void StateSpaceRnn::Initialize(double sigma0, Rng* rng, double* theta) const {
  std::fill(theta, theta + num_params_, 0.0);
  if (spec_.initial_state == InitialState::kEncoder) {
    encoder_.Initialize(sigma0, rng, theta + x0_offset_);
  }
  fx_.Initialize(sigma0, rng, theta + fx_offset_);
  fy_.Initialize(sigma0, rng, theta + fy_offset_);
  if (spec_.linear) {
    ZeroOutputLayer(fx_, theta + fx_offset_);
    ZeroOutputLayer(fy_, theta + fy_offset_);
    if (spec_.initial_state == InitialState::kEncoder) {
      ZeroOutputLayer(encoder_, theta + x0_offset_);
    }
  }
}

void StateSpaceRnn::InitialStateOf(const double* theta,
                                   const Eigen::MatrixXd& u,
                                   const Eigen::MatrixXd& y, int trace,
                                   Tape* t) const {
  const int nx = spec_.nx;
  switch (spec_.initial_state) {
    case InitialState::kFree:
      t->x.col(0) = Eigen::Map<const Eigen::VectorXd>(
          theta + x0_offset_ + trace * nx, nx);
      break;
    case InitialState::kZero:
      t->x.col(0).setZero();
      break;
    case InitialState::kEncoder: {
      const int s = t->start;
      t->encoder.Resize(encoder_, 1);
      auto v0 = t->encoder.input().col(0);
      int r = 0;
      for (int j = 1; j <= spec_.encoder.past_outputs; ++j, r += spec_.ny) {
        v0.segment(r, spec_.ny) = y.col(s - j);
      }
      for (int j = 1; j <= spec_.encoder.past_inputs; ++j, r += spec_.nu) {
        v0.segment(r, spec_.nu) = u.col(s - j);
      }
      encoder_.ForwardColumn(theta + x0_offset_, 0, &t->encoder);
      t->x.col(0) = t->encoder.output().col(0);
      break;
    }
  }
}

void StateSpaceRnn::Reserve(int start, int steps, Tape* t) const {
  t->start = start;
  t->steps = steps;
  t->x.resize(spec_.nx, steps);
  t->fy.Resize(fy_, steps);
  t->fx.Resize(fx_, std::max(steps - 1, 0));
}

void StateSpaceRnn::Simulate(const double* theta, const Eigen::MatrixXd& u,
                             const Eigen::MatrixXd& y, int trace, Tape* t,
                             int max_steps) const {
  int steps = static_cast<int>(u.cols()) - warmup();
  if (max_steps >= 0) steps = std::min(steps, max_steps);
  Reserve(warmup(), steps, t);
  InitialStateOf(theta, u, y, trace, t);
  Run(theta, u, t, 0, steps);
}

void StateSpaceRnn::SimulateFrom(const double* theta,
                                 const Eigen::Ref<const Eigen::VectorXd>& x0,
                                 const Eigen::MatrixXd& u, int start, Tape* t,
                                 int max_steps) const {
  int steps = static_cast<int>(u.cols()) - start;
  if (max_steps >= 0) steps = std::min(steps, max_steps);
  Reserve(start, steps, t);
  t->x.col(0) = x0;
  Run(theta, u, t, 0, steps);
}

void StateSpaceRnn::Run(const double* theta, const Eigen::MatrixXd& u, Tape* t,
                        int begin, int end) const {
  // Raw copies: a few doubles per step, where Eigen's block assignment costs
  // more than the data.
  const int nx = spec_.nx;
  const int nu = spec_.nu;
  const Eigen::Index ny_in = t->fy.input().rows();
  const Eigen::Index nx_in = t->fx.input().rows();
  const Eigen::Index nx_out = t->fx.output().rows();
  for (int k = begin; k < end; ++k) {
    const double* uk = u.data() + (t->start + k) * u.rows();
    const double* xk = t->x.data() + static_cast<Eigen::Index>(k) * nx;
    double* in_y = t->fy.input().data() + k * ny_in;
    std::copy_n(xk, nx, in_y);
    if (spec_.feedthrough) std::copy_n(uk, nu, in_y + nx);
    fy_.ForwardColumn(theta + fy_offset_, k, &t->fy);
    if (spec_.linear) {
      // The network's output activation is linear (validated), so adding
      // to its output leaves its cached derivatives valid.
      AddLinear(theta + cd_offset_, spec_.ny, static_cast<int>(ny_in), in_y,
                t->fy.mutable_output().data() + k * spec_.ny);
    }
    if (k + 1 == t->steps) break;
    double* in_x = t->fx.input().data() + k * nx_in;
    std::copy_n(xk, nx, in_x);
    std::copy_n(uk, nu, in_x + nx);
    fx_.ForwardColumn(theta + fx_offset_, k, &t->fx);
    double* x_next = t->x.data() + static_cast<Eigen::Index>(k + 1) * nx;
    std::copy_n(t->fx.output().data() + k * nx_out, nx, x_next);
    if (spec_.linear) {
      AddLinear(theta + ab_offset_, nx, static_cast<int>(nx_in), in_x, x_next);
    }
  }
}

void StateSpaceRnn::StartSensitivities(const double* theta, int trace, Tape* t,
                                       bool virtual_x0,
                                       Sensitivities* s) const {
  const int nx = spec_.nx;
  s->jac_fy_theta.resize(spec_.ny, fy_.num_params());
  s->jac_fy_in.resize(spec_.ny, fy_.inputs());
  s->jac_fx_theta.resize(nx, fx_.num_params() + n_ab_);
  s->jac_fx_in.resize(nx, fx_.inputs());
  // M_0x: identity for a free x0, d f_x0 / d theta_x0 for the encoder, nothing
  // for x0 = 0; the identity at the virtual x_begin of a later part.
  s->n0 = 0;
  s->col0 = x0_offset_;
  if (virtual_x0) {
    s->n0 = nx;
    s->col0 = num_params_;
    s->m_x0.setIdentity(nx, nx);
  } else {
    switch (spec_.initial_state) {
      case InitialState::kFree:
        s->n0 = nx;
        s->col0 = x0_offset_ + trace * nx;
        s->m_x0.setIdentity(nx, nx);
        break;
      case InitialState::kEncoder: {
        s->n0 = encoder_.num_params();
        s->m_x0.resize(nx, s->n0);
        RowMatrixXd unused(nx, 0);
        encoder_.Jacobian(theta + x0_offset_, 0, &t->encoder, s->m_x0, unused);
        break;
      }
      case InitialState::kZero:
        s->m_x0.resize(nx, 0);
        break;
    }
  }
  s->tmp.resize(nx, s->n0);
  s->m_theta.setZero(nx, fx_.num_params() + n_ab_);
  // Columns of other traces' x0 stay zero.
  s->jac.setZero(spec_.ny, num_params_ + (virtual_x0 ? nx : 0));
}

void StateSpaceRnn::EmbedSensitivities(const Sensitivities& s,
                                       Eigen::MatrixXd* e) const {
  e->setZero(spec_.nx, num_params_);
  if (s.n0 > 0) e->middleCols(s.col0, s.n0) = s.m_x0;
  e->middleCols(fx_offset_, s.m_theta.cols()) = s.m_theta;
}

void StateSpaceRnn::Backward(const double* theta,
                             const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                             int trace, Tape* t, double* grad,
                             Eigen::VectorXd* x0_grad) const {
  const int nx = spec_.nx;
  t->grad_x.setZero(nx);  // dL/dx_{k+1} carried backwards through time
  t->grad_in_fy.resize(fy_.inputs());
  t->grad_in_fx.resize(fx_.inputs());
  for (int k = t->steps - 1; k >= 0; --k) {
    if (k + 1 < t->steps) {
      fx_.BackwardColumn(theta + fx_offset_, k, t->grad_x.data(), &t->fx,
                         t->grad_in_fx.data());
      if (spec_.linear) {
        LinearBackward(theta + ab_offset_, nx, fx_.inputs(), t->grad_x.data(),
                       t->fx.input().col(k).data(), t->grad_in_fx.data(),
                       grad + ab_offset_);
      }
    } else {
      t->grad_in_fx.setZero();
    }
    fy_.BackwardColumn(theta + fy_offset_, k, d_out.col(k).data(), &t->fy,
                       t->grad_in_fy.data());
    if (spec_.linear) {
      LinearBackward(theta + cd_offset_, spec_.ny, fy_.inputs(),
                     d_out.col(k).data(), t->fy.input().col(k).data(),
                     t->grad_in_fy.data(), grad + cd_offset_);
    }
    t->grad_x = t->grad_in_fy.head(nx) + t->grad_in_fx.head(nx);
  }
  fx_.AccumulateGradient(t->fx, grad + fx_offset_);
  fy_.AccumulateGradient(t->fy, grad + fy_offset_);
  if (x0_grad != nullptr) {
    *x0_grad = t->grad_x;
    return;
  }
  switch (spec_.initial_state) {
    case InitialState::kFree:
      Eigen::Map<Eigen::VectorXd>(grad + x0_offset_ + trace * nx, nx) +=
          t->grad_x;
      break;
    case InitialState::kEncoder: {
      Eigen::VectorXd unused(encoder_.inputs());
      encoder_.BackwardColumn(theta + x0_offset_, 0, t->grad_x.data(),
                              &t->encoder, unused.data());
      encoder_.AccumulateGradient(t->encoder, grad + x0_offset_);
      break;
    }
    case InitialState::kZero:
      break;
  }
}

}  // namespace sparrow::core
