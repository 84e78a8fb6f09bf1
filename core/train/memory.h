// How much memory a training run will need, estimated before it starts, so
// that a service can refuse a job that cannot fit instead of letting it
// exhaust the machine. An estimate, not a bound: it counts the large
// objects of each method (the n x n Gauss-Newton matrices, L-BFGS memory,
// activations and tapes, the data and its copies) with the multiplicities the
// implementations use, plus a fixed allowance for the process.
#ifndef SPARROW_CORE_TRAIN_MEMORY_H_
#define SPARROW_CORE_TRAIN_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/train/trainer.h"

namespace sparrow::core {

struct MemoryEstimate {
  int64_t total = 0;        // bytes; the sum of the parts below
  int64_t process = 0;      // the worker process itself
  int64_t data = 0;         // raw file, parsed table, splits, regressors
  int64_t parameters = 0;   // parameter-sized vectors of the method
  int64_t activations = 0;  // forward/backward caches, RNN tapes
  int64_t curvature = 0;    // Gauss-Newton normal equations and factors; RLS P
  // The largest part, in words ("the 12,563 x 12,563 Gauss-Newton matrices").
  std::string dominant;
};

// The estimate for `config` on data with `inputs` input and `outputs` output
// columns, `rows` data rows and `file_bytes` of raw file. InvalidArgument
// from CountParameters for an impossible model, and from CheckRlsBlocks for
// RLS options the network refuses (prefixed "stages[k]: " in a stage).
// Saturates at INT64_MAX.
absl::StatusOr<MemoryEstimate> EstimateMemory(const TrainConfig& config,
                                              int inputs, int outputs,
                                              int64_t rows, int64_t file_bytes);

// Parameters the windows of a free-initial-state model add on `rows` data rows
// (state_space_rnn.subsequence_length with INITIAL_STATE_FREE): nx per
// window, for about rows / stride + 1 windows. 0 for every other model.
int64_t WindowStateParameters(const TrainConfig& config, int64_t rows);

// "512 MiB", "1.5 GiB", "900 KiB", "12 bytes".
std::string FormatBytes(int64_t bytes);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MEMORY_H_
