#include "translate/model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/train/model_registry.h"
#include "core/util/status_macros.h"
#include "translate/config.h"
#include "translate/layered_config.h"
#include "translate/metrics.h"

namespace sparrow::translate {
namespace {

void AddBlocks(const core::Model& m, v1::TrainedModel* out) {
  for (const core::ParamBlock& b : core::FamilyOf(m.config.kind).Blocks(m)) {
    v1::ParameterBlock* p = out->add_blocks();
    p->set_name(b.name);
    p->set_offset(b.offset);
    p->set_size(b.size);
  }
}

// The number of parameters the architecture of `m` needs for n_in inputs and
// n_out outputs. Completes m->config with the data dimensions (and the number
// of traces of a free x0, from the size of the stored x0 block).
int64_t ExpectedParams(const v1::TrainedModel& p, int n_in, int n_out,
                       core::Model* m) {
  int num_traces = 1;
  const auto* rnn = std::get_if<core::StateSpaceRnnKind>(&m->config.kind);
  const int nx = rnn != nullptr ? rnn->rnn.nx : 0;
  for (const v1::ParameterBlock& b : p.blocks()) {
    if (b.name() == "x0" && nx > 0) num_traces = std::max(1, b.size() / nx);
  }
  return core::FamilyOf(m->config.kind)
      .StoredParameters(&m->config, n_in, n_out, num_traces);
}

// The pruning mask and SBDL variances, when stored: one per parameter.
absl::Status ReadMaskAndVariance(const v1::TrainedModel& p, core::Model* m) {
  if (p.mask_size() != 0) {
    if (p.mask_size() != m->params.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the stored model has ", p.mask_size(),
                       " mask entries for ", m->params.size(), " parameters"));
    }
    m->mask.resize(p.mask_size());
    for (int i = 0; i < p.mask_size(); ++i) m->mask(i) = p.mask(i) ? 1.0 : 0.0;
  }
  if (p.variance_size() != 0) {
    if (p.variance_size() != m->params.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the stored model has ", p.variance_size(),
                       " variances for ", m->params.size(), " parameters"));
    }
    m->variance = Eigen::Map<const Eigen::VectorXd>(p.variance().data(),
                                                    p.variance_size());
    if (!m->variance.allFinite() || (m->variance.array() < 0).any()) {
      return absl::InvalidArgumentError(
          "the stored model has negative or non-finite variances");
    }
  }
  if (!(p.noise_variance() >= 0) || !std::isfinite(p.noise_variance())) {
    return absl::InvalidArgumentError(
        "the stored model's noise_variance must be finite and >= 0");
  }
  m->noise_variance = p.noise_variance();
  return absl::OkStatus();
}

}  // namespace

v1::ChannelScaling ToProto(const core::data::Normalizer& n,
                           const std::vector<std::string>& names) {
  v1::ChannelScaling s;
  for (const std::string& name : names) s.add_names(name);
  for (int i = 0; i < n.size(); ++i) {
    s.add_mean(n.mean(i));
    s.add_scale(n.scale(i));
  }
  return s;
}

absl::StatusOr<core::data::Normalizer> FromProto(const v1::ChannelScaling& s,
                                                 int n,
                                                 absl::string_view what) {
  if (s.mean_size() != n || s.scale_size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", s.mean_size(), " means and ",
                     s.scale_size(), " scales; expected ", n));
  }
  core::data::Normalizer out;
  out.mean = Eigen::Map<const Eigen::VectorXd>(s.mean().data(), n);
  out.scale = Eigen::Map<const Eigen::VectorXd>(s.scale().data(), n);
  SPARROW_RETURN_IF_ERROR(out.Validate());
  return out;
}

v1::TrainedModel ToProto(const v1::JobSpec& spec,
                         const core::TrainResult& result) {
  const core::Model& m = result.model;
  v1::TrainedModel out;
  *out.mutable_model() = spec.model();
  WriteResolvedDimensions(m.config, out.mutable_model());
  *out.mutable_loss() = spec.loss();
  out.set_num_inputs(m.input_scaling.size());
  out.set_num_outputs(static_cast<int>(m.output_names.size()));
  *out.mutable_input_scaling() = ToProto(m.input_scaling, m.input_names);
  *out.mutable_output_scaling() = ToProto(m.output_scaling, m.output_names);
  out.mutable_parameters()->Add(m.params.data(),
                                m.params.data() + m.params.size());
  AddBlocks(m, &out);
  *out.mutable_metrics() = ToProto(result.metrics);
  for (Eigen::Index i = 0; i < m.mask.size(); ++i) {
    out.add_mask(m.mask(i) != 0.0);
  }
  out.mutable_variance()->Add(m.variance.data(),
                              m.variance.data() + m.variance.size());
  out.set_noise_variance(m.noise_variance);
  out.set_epochs(result.summary.iterations);
  out.set_termination(core::TerminationName(result.summary.termination));
  out.set_partial(result.summary.termination == core::Termination::kUserAbort ||
                  result.summary.termination == core::Termination::kDiverged);
  out.set_seconds(result.train_seconds);
  out.set_seed(spec.seed());
  out.set_rho_x0(m.rho_x0);
  return out;
}

absl::StatusOr<core::Model> FromProto(const v1::TrainedModel& p) {
  core::Model m;
  SPARROW_ASSIGN_OR_RETURN(m.loss, ToLoss(p.loss()));
  SPARROW_ASSIGN_OR_RETURN(m.config, ToModelConfig(p.model(), m.loss));
  m.rho_x0 = p.rho_x0();
  const int n_in = p.num_inputs();
  const int n_out = p.num_outputs();
  SPARROW_ASSIGN_OR_RETURN(m.input_scaling,
                           FromProto(p.input_scaling(), n_in, "input_scaling"));
  SPARROW_ASSIGN_OR_RETURN(
      m.output_scaling, FromProto(p.output_scaling(), n_out, "output_scaling"));
  m.input_names.assign(p.input_scaling().names().begin(),
                       p.input_scaling().names().end());
  m.output_names.assign(p.output_scaling().names().begin(),
                        p.output_scaling().names().end());
  m.params = Eigen::Map<const Eigen::VectorXd>(p.parameters().data(),
                                               p.parameters_size());
  const int64_t expected = ExpectedParams(p, n_in, n_out, &m);
  if (expected != m.params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the stored model has ", m.params.size(),
                     " parameters but its architecture needs ", expected));
  }
  // Prediction finds the CSV columns by these names.
  if (static_cast<int>(m.input_names.size()) != n_in ||
      static_cast<int>(m.output_names.size()) != n_out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the stored model names ", m.input_names.size(), " inputs and ",
        m.output_names.size(), " outputs but has ", n_in, " and ", n_out));
  }
  if (!m.params.allFinite()) {
    return absl::InvalidArgumentError(
        "the stored model has NaN or Inf parameters");
  }
  SPARROW_RETURN_IF_ERROR(ReadMaskAndVariance(p, &m));
  return m;
}

}  // namespace sparrow::translate
