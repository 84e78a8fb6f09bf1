#include "translate/warm_start.h"

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/train/models/narx_mlp.h"
#include "core/train/models/state_space_rnn.h"
#include "core/util/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "translate/model.h"

namespace sparrow::translate {
namespace {

v1::LossKind KindOf(const v1::LossSpec& loss) {
  return loss.kind() == v1::LOSS_UNSPECIFIED ? v1::LOSS_MSE : loss.kind();
}

// One structural setting of the start model and of the spec ("input_lags", 3,
// 2): parameter blocks of the same sizes can still mean other things (3 and 1
// lags against 2 and 2; another activation), which the block check misses.
struct Setting {
  const char* field;
  std::string start, spec;
};

// A state_space_rnn keeps its activations in its own spec; the other kinds
// in the model config.
std::pair<core::Activation, core::Activation> Activations(
    const core::ModelConfig& c) {
  if (const auto* rnn = std::get_if<core::StateSpaceRnnKind>(&c.kind)) {
    return {rnn->rnn.activation, rnn->rnn.output_activation};
  }
  return {c.activation, c.output_activation};
}

std::vector<Setting> StructuralSettings(const core::ModelConfig& start,
                                        const core::ModelConfig& spec) {
  auto act = [](core::Activation a) {
    return std::string(core::ActivationName(a));
  };
  auto str = [](auto v) { return absl::StrCat(v); };
  const auto [start_hidden, start_output] = Activations(start);
  const auto [spec_hidden, spec_output] = Activations(spec);
  std::vector<Setting> s = {
      {"activation", act(start_hidden), act(spec_hidden)},
      {"output_activation", act(start_output), act(spec_output)}};
  const auto* narx_a = std::get_if<core::NarxMlpKind>(&start.kind);
  const auto* narx_b = std::get_if<core::NarxMlpKind>(&spec.kind);
  if (narx_a != nullptr && narx_b != nullptr) {
    s.push_back({"input_lags", str(narx_a->lags.input_lags),
                 str(narx_b->lags.input_lags)});
    s.push_back({"output_lags", str(narx_a->lags.output_lags),
                 str(narx_b->lags.output_lags)});
    s.push_back({"no_feedthrough", str(!narx_a->lags.feedthrough),
                 str(!narx_b->lags.feedthrough)});
  }
  const auto* rnn_a = std::get_if<core::StateSpaceRnnKind>(&start.kind);
  const auto* rnn_b = std::get_if<core::StateSpaceRnnKind>(&spec.kind);
  if (rnn_a != nullptr && rnn_b != nullptr) {
    const core::StateSpaceRnnSpec& a = rnn_a->rnn;
    const core::StateSpaceRnnSpec& b = rnn_b->rnn;
    s.push_back({"no_feedthrough", str(!a.feedthrough), str(!b.feedthrough)});
    s.push_back({"encoder.past_outputs", str(a.encoder.past_outputs),
                 str(b.encoder.past_outputs)});
    s.push_back({"encoder.past_inputs", str(a.encoder.past_inputs),
                 str(b.encoder.past_inputs)});
  }
  return s;
}

}  // namespace

absl::StatusOr<std::optional<v1::TrainedModel>> WarmStartModel(
    const v1::JobSpec& spec, const v1::TrainedModel* resolved) {
  if (!spec.has_warm_start()) return std::nullopt;
  const v1::WarmStart& w = spec.warm_start();
  switch (w.source_case()) {
    case v1::WarmStart::kModel: {
      v1::TrainedModel model;
      if (!model.ParseFromString(w.model())) {
        return absl::InvalidArgumentError(
            "warm_start.model is not a binary sparrow.v1.TrainedModel");
      }
      return model;
    }
    case v1::WarmStart::kJobId:
      if (resolved != nullptr) return *resolved;
      return absl::InvalidArgumentError(
          "warm_start.job_id names a job on sparrowd; for a local run, "
          "download its model (sparrow model get JOB -o model.json) and set "
          "warm_start.model_path");
    case v1::WarmStart::kModelPath:
      if (resolved != nullptr) return *resolved;
      return absl::InvalidArgumentError(
          "warm_start.model_path is a file on the client's machine, which "
          "sparrowd cannot read; submit with `sparrow submit` (it sends the "
          "file's model inline), or use warm_start.job_id");
    case v1::WarmStart::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "warm_start needs one of job_id, model_path or model");
}

namespace {

// "narx_mlp": the name of the model's kind in specs; empty when unset.
std::string KindName(const v1::ModelSpec& m) {
  const google::protobuf::OneofDescriptor* kind =
      m.GetDescriptor()->FindOneofByName("kind");
  const google::protobuf::FieldDescriptor* field =
      m.GetReflection()->GetOneofFieldDescriptor(m, kind);
  return field == nullptr ? "" : field->name();
}

}  // namespace

absl::Status ApplyWarmStart(const v1::JobSpec& spec,
                            const v1::TrainedModel& model, int n_inputs,
                            core::TrainConfig* config) {
  if (model.model().kind_case() == v1::ModelSpec::KIND_NOT_SET) {
    return absl::InvalidArgumentError(
        "warm_start: the model is empty (no model kind, no parameters): not "
        "a trained model; use a file `sparrow model get` or `sparrow run "
        "--local -o` wrote");
  }
  if (model.model().kind_case() != spec.model().kind_case()) {
    return absl::InvalidArgumentError(
        absl::StrCat("warm_start: the model is a ", KindName(model.model()),
                     " but this spec's model is a ", KindName(spec.model()),
                     "; start from a model of the same kind"));
  }
  if (KindOf(model.loss()) != KindOf(spec.loss())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warm_start: the model was trained with loss ",
        v1::LossKind_Name(KindOf(model.loss())), " but this spec uses ",
        v1::LossKind_Name(KindOf(spec.loss())), "; use the same loss"));
  }
  if (n_inputs > 0 && model.num_inputs() != n_inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("warm_start: the model has ", model.num_inputs(),
                     " input columns but this job has ", n_inputs,
                     "; use the same data columns"));
  }
  absl::StatusOr<core::Model> start = FromProto(model);
  if (!start.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("warm_start: ", start.status().message()));
  }
  for (const Setting& s : StructuralSettings(start->config, config->model)) {
    if (s.start != s.spec) {
      return absl::InvalidArgumentError(absl::StrCat(
          "warm_start: the model has ", s.field, " ", s.start,
          " but this spec has ", s.spec,
          "; a model starts only a spec of the same structure (its weights "
          "would mean other things), so use the model's ",
          s.field));
    }
  }
  config->warm_start = std::make_shared<const core::Model>(*std::move(start));
  return absl::OkStatus();
}

}  // namespace sparrow::translate
