#include "core/data/synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/util/random.h"

namespace sparrow::core::data {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// Independent streams per purpose, so that e.g. the noise level does not
// shift the input sequence.
enum class Stream : uint64_t { kInput = 1, kNoise = 2 };

// SplitMix64 finalizer over (seed, stream): nearby seeds give unrelated
// mt19937_64 states, and the input and noise streams never coincide.
uint64_t StreamSeed(uint64_t seed, Stream stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(stream);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

template <typename T>
absl::Status Invalid(absl::string_view owner, absl::string_view field, T value,
                     absl::string_view constraint) {
  return absl::InvalidArgumentError(
      absl::StrCat(owner, ".", field, " = ", value, ": must be ", constraint));
}

absl::Status RequireAtLeastTwoSamples(absl::string_view owner, int samples) {
  if (samples < 2) return Invalid(owner, "samples", samples, ">= 2");
  return absl::OkStatus();
}

absl::Status RequireNonNegative(absl::string_view owner,
                                absl::string_view field, double value) {
  if (!std::isfinite(value) || value < 0.0) {
    return Invalid(owner, field, value, "finite and >= 0");
  }
  return absl::OkStatus();
}

absl::Status RequirePositive(absl::string_view owner, absl::string_view field,
                             double value) {
  if (!std::isfinite(value) || value <= 0.0) {
    return Invalid(owner, field, value, "finite and > 0");
  }
  return absl::OkStatus();
}

absl::Status RequireInRange(absl::string_view owner, absl::string_view field,
                            double value, double lo, double hi,
                            absl::string_view hi_name) {
  if (!(value >= lo && value <= hi)) {
    const std::string upper =
        hi_name.empty() ? absl::StrCat(hi) : absl::StrCat(hi_name, " = ", hi);
    return Invalid(owner, field, value,
                   absl::StrCat("in [", lo, ", ", upper, "]"));
  }
  return absl::OkStatus();
}

// SBDL eq. (16) without noise, plus the overflow of both tanks: levels
// x = (x1, x2), pump voltage u, o holds k1..k4. The square roots see
// max(x, 0) because RK4 stages may step slightly below an empty tank.
Eigen::Vector2d TankDerivative(const Eigen::Vector2d& x, double u,
                               const CascadedTanksOptions& o) {
  const double k1 = o.upper_outflow_gain;
  const double k2 = o.lower_inflow_gain;
  const double k3 = o.lower_outflow_gain;
  const double k4 = o.pump_gain;
  const double sqrt_x1 = std::sqrt(std::max(x(0), 0.0));
  const double sqrt_x2 = std::sqrt(std::max(x(1), 0.0));
  double dx1 = k4 * u - k1 * sqrt_x1;
  double spill = 0.0;  // Level rate [V/s] of the upper tank lost over its top.
  if (x(0) >= o.upper_tank_top && dx1 > 0.0) {
    spill = dx1;
    dx1 = 0.0;
  }
  // The same volume raises the lower tank by k2/k1 times as much (the ratio
  // of the cross sections), whether it leaves through the outlet or the top.
  double dx2 =
      k2 * sqrt_x1 + (k2 / k1) * o.overflow_fraction * spill - k3 * sqrt_x2;
  if (x(1) >= o.lower_tank_top && dx2 > 0.0) dx2 = 0.0;
  return {dx1, dx2};
}

// Advances the levels over one sample period with constant input u by RK4
// substeps, clamping to [0, top] after each so that the overflow and the
// empty tank act as hard limits.
Eigen::Vector2d AdvanceTanks(Eigen::Vector2d x, double u,
                             const CascadedTanksOptions& o) {
  const double h = o.sample_time / o.rk4_substeps;
  const Eigen::Vector2d top(o.upper_tank_top, o.lower_tank_top);
  for (int step = 0; step < o.rk4_substeps; ++step) {
    const Eigen::Vector2d s1 = TankDerivative(x, u, o);
    const Eigen::Vector2d s2 = TankDerivative(x + 0.5 * h * s1, u, o);
    const Eigen::Vector2d s3 = TankDerivative(x + 0.5 * h * s2, u, o);
    const Eigen::Vector2d s4 = TankDerivative(x + h * s3, u, o);
    x += (h / 6.0) * (s1 + 2.0 * s2 + 2.0 * s3 + s4);
    x = x.cwiseMax(0.0).cwiseMin(top);
  }
  return x;
}

// The random-phase multisine documented at CascadedTanksOptions::input_mean.
Eigen::MatrixXd MultisineInput(const CascadedTanksOptions& o) {
  const int64_t n = o.samples;
  // The small offset keeps an exact bin count (19 for the defaults) from
  // rounding down to the one below.
  const double bins =
      std::floor(o.input_bandwidth_hz * n * o.sample_time + 1e-9);
  // Validate() keeps the bandwidth below Nyquist, so the cast cannot overflow.
  const int64_t max_bins = std::max<int64_t>(1, (n - 1) / 2);
  const int64_t num_bins =
      std::clamp<int64_t>(static_cast<int64_t>(bins), 1, max_bins);
  Rng rng(StreamSeed(o.seed, Stream::kInput));
  Eigen::VectorXd phases(num_bins);
  for (int64_t j = 0; j < num_bins; ++j) phases(j) = kTwoPi * rng.Uniform();
  const double amplitude = o.input_std * std::sqrt(2.0 / num_bins);
  Eigen::MatrixXd u(1, n);
  for (int64_t k = 0; k < n; ++k) {
    double sum = 0.0;
    for (int64_t j = 0; j < num_bins; ++j) {
      // Reducing (j+1) k modulo n first keeps the angle exact for long records.
      const double cycles =
          static_cast<double>(((j + 1) * k) % n) / static_cast<double>(n);
      sum += std::cos(kTwoPi * cycles + phases(j));
    }
    u(0, k) = std::max(0.0, o.input_mean + amplitude * sum);
  }
  return u;
}

}  // namespace

absl::Status CascadedTanksOptions::Validate() const {
  constexpr absl::string_view kOwner = "CascadedTanksOptions";
  if (absl::Status s = RequireAtLeastTwoSamples(kOwner, samples); !s.ok()) {
    return s;
  }
  const std::pair<absl::string_view, double> non_negative[] = {
      {"noise_std", noise_std},
      {"process_noise_std", process_noise_std},
      {"input_std", input_std}};
  for (const auto& [field, value] : non_negative) {
    if (absl::Status s = RequireNonNegative(kOwner, field, value); !s.ok()) {
      return s;
    }
  }
  const std::pair<absl::string_view, double> positive[] = {
      {"sample_time", sample_time},
      {"upper_outflow_gain", upper_outflow_gain},
      {"lower_inflow_gain", lower_inflow_gain},
      {"lower_outflow_gain", lower_outflow_gain},
      {"pump_gain", pump_gain},
      {"upper_tank_top", upper_tank_top},
      {"lower_tank_top", lower_tank_top}};
  for (const auto& [field, value] : positive) {
    if (absl::Status s = RequirePositive(kOwner, field, value); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = RequireInRange(kOwner, "overflow_fraction",
                                      overflow_fraction, 0.0, 1.0, "");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          RequireInRange(kOwner, "initial_upper_level", initial_upper_level,
                         0.0, upper_tank_top, "upper_tank_top");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          RequireInRange(kOwner, "initial_lower_level", initial_lower_level,
                         0.0, lower_tank_top, "lower_tank_top");
      !s.ok()) {
    return s;
  }
  if (rk4_substeps < 1) {
    return Invalid(kOwner, "rk4_substeps", rk4_substeps, ">= 1");
  }
  if (!std::isfinite(input_mean)) {
    return Invalid(kOwner, "input_mean", input_mean, "finite");
  }
  const double nyquist_hz = 0.5 / sample_time;
  if (!(input_bandwidth_hz > 0.0 && input_bandwidth_hz < nyquist_hz)) {
    return Invalid(kOwner, "input_bandwidth_hz", input_bandwidth_hz,
                   absl::StrCat("> 0 and < the Nyquist frequency 1/(2 "
                                "sample_time) = ",
                                nyquist_hz));
  }
  return absl::OkStatus();
}

absl::StatusOr<SyntheticSequence> SimulateCascadedTanks(
    const CascadedTanksOptions& options, const Eigen::MatrixXd& u) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (u.rows() != 1 || u.cols() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("SimulateCascadedTanks: u must be 1 x N with N >= 1, got ",
                     u.rows(), " x ", u.cols()));
  }
  for (Eigen::Index k = 0; k < u.cols(); ++k) {
    if (!std::isfinite(u(0, k))) {
      return absl::InvalidArgumentError(
          absl::StrCat("SimulateCascadedTanks: u(0, ", k, ") = ", u(0, k),
                       ": must be finite"));
    }
  }
  const Eigen::Index n = u.cols();
  const Eigen::Vector2d top(options.upper_tank_top, options.lower_tank_top);
  Rng noise(StreamSeed(options.seed, Stream::kNoise));

  SyntheticSequence out;
  out.u = u;
  out.y.resize(1, n);
  out.states.resize(2, n);
  out.input_names = {"u"};
  out.output_names = {"y"};
  out.state_names = {"x1", "x2"};
  Eigen::Vector2d x(options.initial_upper_level, options.initial_lower_level);
  for (Eigen::Index k = 0; k < n; ++k) {
    // Element-wise: GCC 12 warns falsely (-Wstringop-overread) on the
    // vectorised copy of a Vector2d into a column of a dynamic matrix.
    out.states(0, k) = x(0);
    out.states(1, k) = x(1);
    out.y(0, k) = x(1) + options.noise_std * noise.Normal();
    if (k + 1 == n) break;
    x = AdvanceTanks(x, u(0, k), options);
    const double w1 = noise.Normal();
    const double w2 = noise.Normal();
    x += options.process_noise_std * Eigen::Vector2d(w1, w2);
    x = x.cwiseMax(0.0).cwiseMin(top);
  }
  return out;
}

absl::StatusOr<SyntheticSequence> GenerateCascadedTanks(
    const CascadedTanksOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  return SimulateCascadedTanks(options, MultisineInput(options));
}

absl::Status BinarySystemOptions::Validate() const {
  constexpr absl::string_view kOwner = "BinarySystemOptions";
  if (absl::Status s = RequireAtLeastTwoSamples(kOwner, samples); !s.ok()) {
    return s;
  }
  return RequireNonNegative(kOwner, "noise_std", noise_std);
}

absl::StatusOr<SyntheticSequence> GenerateBinarySystem(
    const BinarySystemOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  // Bemporad Sec. 5.5 (ALGORITHMS.md §2.7 item 5.5).
  Eigen::Matrix3d a;
  a << 0.8, 0.2, -0.1,  //
      0.0, 0.9, 0.1,    //
      0.1, -0.1, 0.7;
  const Eigen::Vector3d b(-1.0, 0.5, 1.0);
  const Eigen::Vector3d c(-2.0, 1.5, 0.5);
  constexpr double kRedrawProbability = 0.9;
  constexpr double kThreshold = 4.0;

  const int n = options.samples;
  Rng input_rng(StreamSeed(options.seed, Stream::kInput));
  Rng noise(StreamSeed(options.seed, Stream::kNoise));
  SyntheticSequence out;
  out.u.resize(1, n);
  out.y.resize(1, n);
  out.states.resize(3, n);
  out.input_names = {"u"};
  out.output_names = {"y"};
  out.state_names = {"x1", "x2", "x3"};

  Eigen::Vector3d x = Eigen::Vector3d::Zero();
  double u = input_rng.Uniform();
  for (int k = 0; k < n; ++k) {
    if (k > 0 && input_rng.Uniform() < kRedrawProbability) {
      u = input_rng.Uniform();
    }
    const double zeta = options.noise_std * noise.Normal();
    Eigen::Vector3d xi;
    for (int i = 0; i < 3; ++i) xi(i) = options.noise_std * noise.Normal();

    out.u(0, k) = u;
    // Element by element: GCC 12 flags Eigen's 4-wide AVX copy of a
    // 3-vector into a dynamic column as out of bounds (-Warray-bounds).
    for (int i = 0; i < 3; ++i) out.states(i, k) = x(i);
    const double score =
        c.dot(x + x.array().cube().matrix() / 3.0) - kThreshold + zeta;
    out.y(0, k) = score >= 0.0 ? 1.0 : 0.0;
    const Eigen::Vector3d damped = x.array() * (0.9 + 0.1 * x.array().sin());
    x = a * damped + b * (u * (1.0 - u * u * u)) + xi;
  }
  return out;
}

absl::Status NarxLagsOptions::Validate() const {
  constexpr absl::string_view kOwner = "NarxLagsOptions";
  if (samples < 4) return Invalid(kOwner, "samples", samples, ">= 4");
  return RequireNonNegative(kOwner, "noise_std", noise_std);
}

absl::StatusOr<SyntheticSequence> GenerateNarxLags(
    const NarxLagsOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  const int n = options.samples;
  Rng input_rng(StreamSeed(options.seed, Stream::kInput));
  Rng noise(StreamSeed(options.seed, Stream::kNoise));
  SyntheticSequence out;
  out.u.resize(1, n);
  out.y.resize(1, n);
  out.states.resize(1, n);
  out.input_names = {"u"};
  out.output_names = {"y"};
  out.state_names = {"y_true"};
  for (int t = 0; t < n; ++t) out.u(0, t) = 2.0 * input_rng.Uniform() - 1.0;
  auto past = [&](const Eigen::MatrixXd& m, int t) {
    return t >= 0 ? m(0, t) : 0.0;
  };
  for (int t = 0; t < n; ++t) {
    const double u3 = past(out.u, t - 3);
    out.states(0, t) = 0.7 * past(out.states, t - 1) +
                       std::tanh(2.0 * past(out.u, t - 1)) - 0.5 * u3 * u3;
    out.y(0, t) = out.states(0, t) + options.noise_std * noise.Normal();
  }
  return out;
}

}  // namespace sparrow::core::data
