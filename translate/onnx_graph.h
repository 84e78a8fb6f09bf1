// Building ONNX graphs (onnx::GraphProto, Debian's libonnx) from Sparrow's
// models: named float64 values, initializers and nodes, and the pieces every
// exported model is made of (dense chains in the dense parameter layout of
// docs/models.md, activations, the per-channel scalings).
//
// ONNX itself has no C++ graph builder; onnx's helper module is Python. This
// is the small part of one that the exporter (onnx_export.h) needs.
#ifndef SPARROW_TRANSLATE_ONNX_GRAPH_H_
#define SPARROW_TRANSLATE_ONNX_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/data/normalization.h"
#include "core/models/activation.h"
#include "core/models/mlp.h"
#include "onnx/onnx_pb.h"

namespace sparrow::translate::onnx_export {

// The opset every exported model imports (ONNX 1.12's newest).
inline constexpr int64_t kOpset = 17;

// Adds nodes to `nodes` and constants to `constants` (the main graph: a Scan
// body refers to the main graph's initializers by name, so its weights are
// stored once). Value names are unique across both: a hint and a counter
// shared by the builders of one model.
class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto* nodes, onnx::GraphProto* constants,
               int* counter)
      : nodes_(nodes), constants_(constants), counter_(counter) {}

  // A fresh value name "<hint>_<n>".
  std::string Name(absl::string_view hint);

  // A float64 initializer of shape `dims` holding `data` (row-major).
  std::string Doubles(absl::string_view hint, const std::vector<int64_t>& dims,
                      const double* data);
  // The same as float32 (for operators onnxruntime runs in float only).
  std::string Floats(absl::string_view hint, const std::vector<int64_t>& dims,
                     const std::vector<float>& data);
  // A 1-D int64 initializer.
  std::string Int64s(absl::string_view hint,
                     const std::vector<int64_t>& values);

  // A node of `op` with one output, named from `hint`; the node is returned
  // for attributes.
  onnx::NodeProto* Node(absl::string_view op,
                        const std::vector<std::string>& inputs,
                        const std::string& output);
  std::string Apply(absl::string_view op,
                    const std::vector<std::string>& inputs,
                    absl::string_view hint);

  // An INT attribute, an INTS attribute and a Cast of `v` to `type`
  // (onnx::TensorProto::FLOAT or DOUBLE).
  static void SetInt(onnx::NodeProto* node, const std::string& name,
                     int64_t value);
  static void SetInts(onnx::NodeProto* node, const std::string& name,
                      const std::vector<int64_t>& values);
  std::string Cast(const std::string& v, int type);

  // f(v) as docs/models.md defines it (leaky ReLU: max(v, 0.1 v)).
  std::string Activate(const std::string& v, core::Activation f);
  // The dense chain of `spec` with parameters `theta` (docs/models.md's
  // layout) on `x`, [..., inputs] -> [..., outputs]: MatMul with A^T (the
  // column-major A read row by row) and Add b per layer.
  std::string Dense(const std::string& x, const core::MlpSpec& spec,
                    const double* theta, absl::string_view hint);
  // z = (v - mean) / scale and its inverse v = z * scale + mean, channel
  // by channel along the last axis.
  std::string Scale(const std::string& v, const core::data::Normalizer& n,
                    absl::string_view hint);
  std::string Unscale(const std::string& z, const core::data::Normalizer& n,
                      absl::string_view hint);

  // A float64 graph input or output of shape `dims` ("" for a symbolic
  // dimension, named by `dim_names` in order).
  void Input(const std::string& name, const std::vector<int64_t>& dims,
             const std::vector<std::string>& dim_names = {});
  void Output(const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<std::string>& dim_names = {});

 private:
  onnx::GraphProto* nodes_;
  onnx::GraphProto* constants_;
  int* counter_;
};

// A model under construction: the proto and the name counter its builders
// share.
struct OnnxModel {
  onnx::ModelProto proto;
  int counter = 0;
  GraphBuilder Main() {
    return GraphBuilder(proto.mutable_graph(), proto.mutable_graph(), &counter);
  }
};

// A symbolic dimension in GraphBuilder::Input / Output shapes.
inline constexpr int64_t kDynamic = -1;

// onnx::checker's check of the whole model, then strict shape and type
// inference (what Python's onnx.checker.check_model(m, full_check=True)
// does). Internal with the checker's message: the exporter built a wrong
// graph.
absl::Status CheckModel(const onnx::ModelProto& model);

}  // namespace sparrow::translate::onnx_export

#endif  // SPARROW_TRANSLATE_ONNX_GRAPH_H_
