// A trained model as an ONNX model (opset 17, float64 throughout;
// docs/onnx.md), so that it runs without Sparrow: onnxruntime, or any other
// ONNX runtime.
//
//   mlp, cnn, rnn,   input [N, inputs] -> output [N, outputs], data units
//   lstm             (the predictions `sparrow predict` makes on rows), and
//                    for a softmax classifier probabilities [N, classes].
//                    Conv, RNN and LSTM layers compute in float32
//                    (onnx_layered.h).
//   narx_mlp         u [T, nu], y [T, ny] (measured) -> y_pred [T - L, ny]:
//                    one-step-ahead predictions of samples L..T-1, L the
//                    largest lag (`sparrow predict --one-step`).
//   state_space_rnn  u [T, nu], x0 [nx] -> y [T, ny], x_final [nx]: the
//                    free-run simulation from x0 (normalized state units, as
//                    `sparrow predict` prints and takes with --x0), a Scan
//                    over time; x_final is the state after the last input.
//
// Inputs and outputs are in data units: the model's scalings are part of the
// graph. The model's metadata_props name the data columns.
#ifndef SPARROW_TRANSLATE_ONNX_EXPORT_H_
#define SPARROW_TRANSLATE_ONNX_EXPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "sparrow/v1/model.pb.h"

namespace sparrow::translate {

// The ONNX model of `model`, checked by onnx::checker and strict shape
// inference. InvalidArgument for a stored model that is inconsistent (as
// FromProto).
absl::StatusOr<onnx::ModelProto> ToOnnx(const v1::TrainedModel& model);

// ToOnnx, serialized (the bytes of a .onnx file).
absl::StatusOr<std::string> ExportOnnx(const v1::TrainedModel& model);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_ONNX_EXPORT_H_
