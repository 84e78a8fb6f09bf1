// NAILS and NAILM (core/optim/gauss_newton) on a state-space RNN, and ADMM
// (core/optim/admm) around them for the non-smooth penalties (Bemporad §4).
#include "core/optim/gauss_newton/gauss_newton.h"

#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/optim/admm/admm.h"
#include "core/optim/admm/state.h"
#include "core/optim/gauss_newton/least_squares.h"
#include "core/train/methods.h"
#include "core/train/state_groups.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

using PenaltyKind = TrainConfig::Penalty::Kind;

// The parameters the penalty acts on: the state groups for group Lasso, all
// network weights and biases (theta_x, theta_y) otherwise. A linear part's
// [A B] and [C D] are left out: a sparsity or quantization penalty is about
// the networks, and forcing A..D onto levels would wreck the linear start.
std::vector<int> PenaltySplit(const TrainConfig::Penalty& p,
                              const StateSpaceRnn& rnn) {
  std::vector<int> split;
  if (p.kind == PenaltyKind::kGroupLasso) {
    for (const auto& g : StateGroups(rnn))
      split.insert(split.end(), g.begin(), g.end());
    return split;
  }
  auto add = [&](int offset, int size) {
    for (int i = offset; i < offset + size; ++i) split.push_back(i);
  };
  add(rnn.fx_offset(), rnn.fx().num_params());
  add(rnn.fy_offset(), rnn.fy().num_params());
  return split;
}

absl::StatusOr<std::unique_ptr<Proximal>> MakePenalty(
    const TrainConfig::Penalty& p, const StateSpaceRnn& rnn) {
  switch (p.kind) {
    case PenaltyKind::kL1:
      return MakeL1(p.tau);
    case PenaltyKind::kL0:
      return MakeL0(p.tau);
    case PenaltyKind::kGroupLasso: {
      // Positions within the split vector, which lists the groups in order.
      std::vector<std::vector<int>> groups = StateGroups(rnn);
      int next = 0;
      for (auto& g : groups) {
        for (int& i : g) i = next++;
      }
      return MakeGroupLasso(p.tau, std::move(groups));
    }
    case PenaltyKind::kQuantization:
      return MakeQuantization(p.levels);
    case PenaltyKind::kBinary:
      return MakeBinary();
    case PenaltyKind::kNone:
      break;
  }
  return absl::InvalidArgumentError("no penalty");
}

// The model is nu (Bemporad §4): re-fits the training initial states for it,
// starting from those learned with theta.
void RefitInitialStates(const TrainConfig& config, const TrainSetup& setup,
                        Eigen::VectorXd* w) {
  const int nx = setup.rnn.spec().nx;
  for (size_t t = 0; t < setup.train_seq.traces.size(); ++t) {
    const data::Trace& tr = setup.train_seq.traces[t];
    const Eigen::VectorXd guess = w->segment(t * nx, nx);
    w->segment(t * nx, nx) =
        EstimateInitialState(setup.rnn, *w, tr.u, tr.y, tr.length(),
                             config.loss, config.rho_x0, &guess);
  }
}

absl::StatusOr<Summary> RunAdmm(const GaussNewtonOptions& o,
                                const Eigen::VectorXd& resume_state,
                                const TrainConfig& config,
                                LeastSquaresProblem& problem,
                                const TrainSetup& setup, Eigen::VectorXd* w,
                                IterationCallback* callback) {
  const TrainConfig::Penalty& penalty = config.penalty;
  SPARROW_ASSIGN_OR_RETURN(std::unique_ptr<Proximal> g,
                           MakePenalty(penalty, setup.rnn));
  AdmmOptions a = config.admm;
  a.stop.max_seconds = o.stop.max_seconds;
  a.stop.report_every = o.stop.report_every;
  a.initial_state = resume_state;
  a.rho =
      AdmmRho(a, penalty.kind == PenaltyKind::kGroupLasso ? penalty.tau : 0.0);
  const std::vector<int> split = PenaltySplit(penalty, setup.rnn);
  // MinimizeAdmm starts afresh from a state that does not fit; that run would
  // not continue the checkpoint's.
  if (!AdmmStateFits(a, static_cast<int>(split.size()),
                     static_cast<int>(w->size()))) {
    return ResumeStateError(OptimizerName(config.optimizer),
                            resume_state.size());
  }
  Summary summary = MinimizeAdmm(a, o, problem, *g, split, w, callback);
  if (setup.rnn.spec().initial_state == InitialState::kFree) {
    RefitInitialStates(config, setup, w);
  }
  return summary;
}

absl::Status Check(const GaussNewtonOptions& options, int threads,
                   const TrainConfig& config, const char* name) {
  if (!config.model.is<StateSpaceRnnKind>()) {
    return absl::InvalidArgumentError(
        "optimizer.nails/nailm train state_space_rnn models; use lbfgs or adam "
        "for mlp and narx_mlp");
  }
  if (config.penalty.kind != PenaltyKind::kNone) {
    if (!(config.penalty.tau >= 0) || !std::isfinite(config.penalty.tau)) {
      return OptionError("regularization.*.tau", config.penalty.tau, ">= 0");
    }
    const absl::Status admm = config.admm.Validate();
    if (!admm.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("optimizer.", name, ".admm: ", admm.message()));
    }
  }
  if (threads < 1) {
    return OptionError(absl::StrCat("optimizer.", name, ".threads"), threads,
                       ">= 1");
  }
  return OptionsStatus(options.Validate(), name);
}

absl::StatusOr<MethodResult> Run(const GaussNewtonOptions& o, int threads,
                                 const Eigen::VectorXd& admm_state,
                                 const TrainConfig& config, TrainSetup* setup,
                                 Eigen::VectorXd* w,
                                 IterationCallback* callback) {
  SequenceLeastSquares problem(&setup->rnn, &setup->train_seq.traces,
                               config.loss, config.rho_x0, config.rho_theta,
                               threads);
  MethodResult result;
  if (config.penalty.kind == PenaltyKind::kNone) {
    result.summary = MinimizeGaussNewton(o, problem, w, callback);
  } else {
    SPARROW_ASSIGN_OR_RETURN(
        result.summary,
        RunAdmm(o, admm_state, config, problem, *setup, w, callback));
  }
  return result;
}

}  // namespace

absl::Status CheckMethod(const NailsOptions& options,
                         const TrainConfig& config) {
  return Check(options, options.threads, config, "nails");
}
absl::Status CheckMethod(const NailmOptions& options,
                         const TrainConfig& config) {
  return Check(options, options.threads, config, "nailm");
}

absl::StatusOr<MethodResult> RunMethod(const NailsOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  return Run(options, options.threads, options.admm_state, config, setup, w,
             callback);
}
absl::StatusOr<MethodResult> RunMethod(const NailmOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  return Run(options, options.threads, options.admm_state, config, setup, w,
             callback);
}

// Under a non-smooth penalty, ADMM goes on from its state (theta, the dual
// and the damping). Without one, NAILS's line search starts afresh every
// epoch: nothing to carry.
void ResumeMethod(const ResumePoint& point, const TrainConfig& config,
                  NailsOptions* options) {
  if (config.penalty.kind != PenaltyKind::kNone) {
    options->admm_state = point.state;
  }
}
// NAILM's damping continues from the checkpoint's: the step size reported is
// the damping of the accepted step, and the next epoch starts from it divided
// by c3, as in the uninterrupted run. Under ADMM the damping is in the ADMM
// state.
void ResumeMethod(const ResumePoint& point, const TrainConfig& config,
                  NailmOptions* options) {
  if (config.penalty.kind != PenaltyKind::kNone) {
    options->admm_state = point.state;
  } else if (std::isfinite(point.step_size) && point.step_size > 0) {
    options->lambda0 = NailmNextDamping(point.step_size, options->c3);
  }
}

}  // namespace sparrow::core
