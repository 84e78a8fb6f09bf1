// Per-channel affine scaling of data matrices whose rows are channels and
// whose columns are samples. A trained model stores its input and output
// normalizers so that predictions are made, and reported, in physical units.
//
// Thread safety: a const Normalizer may be shared between threads.
#ifndef SPARROW_CORE_DATA_NORMALIZATION_H_
#define SPARROW_CORE_DATA_NORMALIZATION_H_

#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"

namespace sparrow::core::data {

// z = (v - mean) / scale, channel by channel; v = z * scale + mean inverts it.
struct Normalizer {
  Eigen::VectorXd mean;
  Eigen::VectorXd scale;

  // mean 0, scale 1 for n channels: Apply and Invert leave data unchanged.
  static Normalizer Identity(int n);

  // Z-score over the samples (columns) of all blocks together: mean and
  // population standard deviation (divide by the sample count) per channel.
  // A constant channel (standard deviation at most 1e-10 |mean|) gets scale 1
  // instead of a division by zero. Every block must be non-null and have the
  // same number of rows (channels); that is a programmer error, checked by
  // assert. Without any sample the result is Identity(number of rows).
  static Normalizer FitZScore(
      const std::vector<const Eigen::MatrixXd*>& blocks);

  // Min-max over the samples of all blocks together: v = min maps to 0 and
  // v = max to 1 (mean holds the minimum, scale the range). A constant channel
  // (range at most 1e-10 |min|) gets scale 1. Same preconditions as FitZScore.
  static Normalizer FitMinMax(
      const std::vector<const Eigen::MatrixXd*>& blocks);

  // Number of channels.
  int size() const { return static_cast<int>(mean.size()); }

  // Checks a normalizer that comes from outside (e.g. a stored model): mean
  // and scale have the same size, all entries are finite and every scale is
  // nonzero. Errors are InvalidArgument naming the channel.
  absl::Status Validate() const;

  // *m = (*m - mean) / scale, per row (channel). m->rows() must equal size().
  void Apply(Eigen::MatrixXd* m) const;
  // *m = *m * scale + mean, per row: undoes Apply.
  void Invert(Eigen::MatrixXd* m) const;
};

}  // namespace sparrow::core::data

#endif  // SPARROW_CORE_DATA_NORMALIZATION_H_
