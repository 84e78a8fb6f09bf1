// The state-space RNN: its entry in ModelConfig::kind, with its own networks
// (ModelConfig's shared network fields are not used).
#ifndef SPARROW_CORE_TRAIN_MODELS_STATE_SPACE_RNN_H_
#define SPARROW_CORE_TRAIN_MODELS_STATE_SPACE_RNN_H_

#include <cstdint>

#include "core/models/state_space_rnn.h"

namespace sparrow::core {

class ModelFamily;

struct StateSpaceRnnKind {
  static constexpr char kName[] = "state_space_rnn";
  static const ModelFamily& Family();  // core/train/models/state_space_rnn.cc

  // nu, ny and num_traces are set from the data by the trainer.
  StateSpaceRnnSpec rnn;
  // Samples of a new trace used to estimate a free x0 (Bemporad eq. 30, N0).
  int x0_estimation_samples = 100;
  // Block rows of the subspace fit that initializes a linear part (rnn.linear);
  // 0: max(2 nx, 10).
  int linear_block_rows = 0;
  // > 0: the objective sees subsequences of the training traces, windows of
  // this many predicted samples after the encoder's own, starting every
  // subsequence_stride samples (data::Subsequences). 0: automatic (see
  // SubsequenceLength). kWholeTraces: never.
  int subsequence_length = 0;
  int subsequence_stride = 0;
};

inline constexpr int kWholeTraces = -1;
// The automatic choice: an encoder model trains on windows of
// kAutoSubsequenceLength samples when a training trace is longer than
// kAutoSubsequenceAbove. Over tens of thousands of samples the sensitivities
// of one simulation grow until the Gauss-Newton normal equations lose their
// accuracy (docs/models.md#long-records-subsequences).
inline constexpr int kAutoSubsequenceLength = 1000;
inline constexpr int kAutoSubsequenceAbove = 20000;

// The window length training uses on traces whose longest has
// `longest_trace` samples; 0 = whole traces.
int SubsequenceLength(const StateSpaceRnnKind& kind, int64_t longest_trace);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODELS_STATE_SPACE_RNN_H_
