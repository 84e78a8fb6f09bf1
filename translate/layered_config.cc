#include "translate/layered_config.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "translate/config.h"

namespace sparrow::translate {
namespace {

using core::Activation;
using Type = core::CnnLayerConfig::Type;

absl::StatusOr<core::CnnLayerConfig> ToCnnLayer(const v1::CnnLayer& l,
                                                const std::string& field) {
  core::CnnLayerConfig c;
  switch (l.layer_case()) {
    case v1::CnnLayer::kConv: {
      c.type = Type::kConv;
      c.units = l.conv().filters();
      c.kernel = l.conv().kernel() == 0 ? 3 : l.conv().kernel();
      c.stride = l.conv().stride();
      c.padding = l.conv().padding();
      SPARROW_ASSIGN_OR_RETURN(
          c.activation, ToActivation(l.conv().activation(), Activation::kRelu,
                                     field + ".conv.activation"));
      break;
    }
    case v1::CnnLayer::kMaxPool:
      c.type = Type::kMaxPool;
      c.size = l.max_pool().size();
      c.stride = l.max_pool().stride();
      break;
    case v1::CnnLayer::kFlatten:
      c.type = Type::kFlatten;
      c.size = l.flatten().size();
      break;
    case v1::CnnLayer::kDense: {
      c.type = Type::kDense;
      c.units = l.dense().units();
      SPARROW_ASSIGN_OR_RETURN(
          c.activation, ToActivation(l.dense().activation(), Activation::kRelu,
                                     field + ".dense.activation"));
      break;
    }
    case v1::CnnLayer::LAYER_NOT_SET:
      return absl::InvalidArgumentError(
          absl::StrCat(field,
                       ": set one of conv, max_pool, flatten, dense (e.g. "
                       "{\"conv\": {\"filters\": 32, \"padding\": 1}})"));
  }
  return c;
}

absl::Status ToCnn(const v1::CnnModel& m, core::ModelConfig* c) {
  core::CnnKind& k = c->kind.emplace<core::CnnKind>();
  k.channels = m.channels();
  k.height = m.height();
  k.width = m.width();
  if (k.channels < 0 || k.height < 0 || k.width < 0) {
    return absl::InvalidArgumentError(
        "model.cnn.channels, height and width must be >= 0 (0 = the "
        "image dataset's shape)");
  }
  for (int i = 0; i < m.layers_size(); ++i) {
    SPARROW_ASSIGN_OR_RETURN(
        core::CnnLayerConfig l,
        ToCnnLayer(m.layers(i), absl::StrCat("model.cnn.layers[", i, "]")));
    k.layers.push_back(l);
  }
  return absl::OkStatus();
}

template <typename Proto>
absl::Status ToRecurrent(const Proto& m, const char* name,
                         core::RecurrentConfig* k) {
  k->hidden.assign(m.hidden().begin(), m.hidden().end());
  k->steps = m.steps();
  k->sequence_output = m.sequence_output();
  if (k->steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.", name, ".steps is ", k->steps,
                     "; it must be >= 0 (0 = the image height)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<core::InitLaw> ToInitLaw(const std::string& init) {
  if (init.empty() || init == "glorot") return core::InitLaw::kGlorot;
  if (init == "he") return core::InitLaw::kHe;
  if (init == "torch") return core::InitLaw::kTorch;
  if (init == "orthogonal") return core::InitLaw::kOrthogonal;
  return absl::InvalidArgumentError(
      absl::StrCat("model.init is \"", init,
                   "\"; use \"glorot\", \"he\", \"torch\" or \"orthogonal\""));
}

absl::Status ToLayeredConfig(const v1::ModelSpec& m, core::ModelConfig* c) {
  SPARROW_ASSIGN_OR_RETURN(c->init, ToInitLaw(m.init()));
  switch (m.kind_case()) {
    case v1::ModelSpec::kCnn:
      return ToCnn(m.cnn(), c);
    case v1::ModelSpec::kRnn: {
      core::RnnKind& k = c->kind.emplace<core::RnnKind>();
      SPARROW_ASSIGN_OR_RETURN(
          k.activation, ToActivation(m.rnn().activation(), Activation::kTanh,
                                     "model.rnn.activation"));
      return ToRecurrent(m.rnn(), "rnn", &k);
    }
    case v1::ModelSpec::kLstm:
      return ToRecurrent(m.lstm(), "lstm", &c->kind.emplace<core::LstmKind>());
    default:
      return absl::InvalidArgumentError("not a cnn, rnn or lstm model");
  }
}

void WriteResolvedDimensions(const core::ModelConfig& c, v1::ModelSpec* m) {
  if (c.is<core::CnnKind>() && m->has_cnn()) {
    const core::CnnKind& k = c.as<core::CnnKind>();
    m->mutable_cnn()->set_channels(k.channels);
    m->mutable_cnn()->set_height(k.height);
    m->mutable_cnn()->set_width(k.width);
  } else if (c.is<core::RnnKind>() && m->has_rnn()) {
    m->mutable_rnn()->set_steps(c.as<core::RnnKind>().steps);
  } else if (c.is<core::LstmKind>() && m->has_lstm()) {
    m->mutable_lstm()->set_steps(c.as<core::LstmKind>().steps);
  }
}

}  // namespace sparrow::translate
