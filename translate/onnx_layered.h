// ONNX graphs of the layered models (cnn, rnn, lstm; onnx_export.h): the
// core Network's layers in order, on table rows in data units.
//
// onnxruntime has no float64 kernel for Conv, RNN and LSTM, so those layers
// compute in float32 (their weights are float initializers, and Casts frame
// them); every other operator stays float64.
#ifndef SPARROW_TRANSLATE_ONNX_LAYERED_H_
#define SPARROW_TRANSLATE_ONNX_LAYERED_H_

#include <string>

#include "absl/status/status.h"
#include "core/train/model.h"
#include "translate/onnx_graph.h"

namespace sparrow::translate::onnx_export {

// Adds the graph of the cnn, rnn or lstm model `m`: input [N, inputs] to
// output [N, outputs] (a sequence_output model's outputs step-major, as
// `sparrow predict` writes them). Returns the name of the output before its
// scaling is undone, for the caller to finish.
absl::StatusOr<std::string> BuildLayered(const core::Model& m, GraphBuilder* g,
                                         const std::string& input);

}  // namespace sparrow::translate::onnx_export

#endif  // SPARROW_TRANSLATE_ONNX_LAYERED_H_
