// ModelJson (views.h): the trained model's weight matrices for the heat map,
// with its stored metrics (sparsity per layer, removed inputs and neurons,
// model order).
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/train/model.h"
#include "core/util/status_macros.h"
#include "server/http/proto_json.h"
#include "server/http/views.h"
#include "translate/model.h"

namespace sparrow::server::http {
namespace {

using nlohmann::json;

constexpr int kMaxMatrixSide = 200;

// An MLP of the model and where its parameters start.
struct Network {
  std::string prefix;
  core::Mlp mlp;
  int offset = 0;
};

std::vector<Network> Networks(const core::Model& m,
                              const v1::TrainedModel& proto) {
  if (const auto* r = std::get_if<core::StateSpaceRnnKind>(&m.config.kind)) {
    const core::StateSpaceRnn rnn(r->rnn);
    return {{"fx ", rnn.fx(), rnn.fx_offset()},
            {"fy ", rnn.fy(), rnn.fy_offset()}};
  }
  if (m.config.is<core::NarxMlpKind>()) {
    return {{"", core::NarxModel(m).network(), 0}};
  }
  return {{"",
           core::Mlp(core::NetworkSpec(m.config, proto.num_inputs(),
                                       proto.num_outputs())),
           0}};
}

// A weight matrix of a network (a layer, or the linear term): rows = neurons,
// cols = inputs, exact zeros counted over the whole matrix, the weights cut to
// kMaxMatrixSide on each side.
json LayerJson(const Network& net, const core::DenseBlock& l, std::string name,
               const Eigen::VectorXd& params) {
  const double* w = params.data() + net.offset + l.weight_offset;
  int zeros = 0;
  for (int k = 0; k < l.in * l.out; ++k) zeros += w[k] == 0.0 ? 1 : 0;
  const int rows = std::min(l.out, kMaxMatrixSide);
  const int cols = std::min(l.in, kMaxMatrixSide);
  json weights = json::array();
  for (int r = 0; r < rows; ++r) {
    json row = json::array();
    for (int c = 0; c < cols; ++c) row.push_back(w[c * l.out + r]);
    weights.push_back(std::move(row));
  }
  return {{"name", std::move(name)},
          {"rows", l.out},
          {"cols", l.in},
          {"zeros", zeros},
          {"zero_pct", 100.0 * zeros / std::max(1, l.in * l.out)},
          {"truncated", rows < l.out || cols < l.in},
          {"weights", std::move(weights)}};
}

}  // namespace

absl::StatusOr<json> ModelJson(const v1::TrainedModel& proto) {
  SPARROW_ASSIGN_OR_RETURN(core::Model m, translate::FromProto(proto));
  json layers = json::array();
  for (const Network& net : Networks(m, proto)) {
    if (net.offset + net.mlp.num_params() > m.params.size()) continue;
    for (int i = 0; i < static_cast<int>(net.mlp.layers().size()); ++i) {
      layers.push_back(LayerJson(net, net.mlp.layers()[i],
                                 absl::StrCat(net.prefix, "layer ", i + 1),
                                 m.params));
    }
    if (const core::DenseBlock* l = net.mlp.linear()) {
      layers.push_back(LayerJson(
          net, *l, absl::StrCat(net.prefix, "linear term"), m.params));
    }
  }
  json blocks = json::array();
  for (const v1::ParameterBlock& b : proto.blocks()) {
    blocks.push_back(
        {{"name", b.name()}, {"offset", b.offset()}, {"size", b.size()}});
  }
  json metrics = ProtoJson(proto.metrics());
  const bool rnn = m.config.is<core::StateSpaceRnnKind>();
  return json{{"kind", OneofName(proto.model())},
              {"num_inputs", proto.num_inputs()},
              {"num_outputs", proto.num_outputs()},
              {"num_parameters", proto.parameters_size()},
              {"metrics", metrics},
              {"layers", std::move(layers)},
              {"blocks", std::move(blocks)},
              {"removed", metrics["removed"]},
              {"model_order", rnn ? metrics["model_order"] : json(nullptr)}};
}

}  // namespace sparrow::server::http
