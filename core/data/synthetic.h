// Synthetic identification data sets: simulated systems whose inputs, outputs
// and latent states are known exactly, for tests, examples and benchmarks that
// must not depend on files.
//
//   - GenerateCascadedTanks / SimulateCascadedTanks: the two-tank model of the
//     SBDL paper (Zhou, Ibrahim, Pan, eq. (16); ALGORITHMS.md §1.6) with the
//     overflow saturation of the real benchmark, scaled like the
//     nonlinearbenchmark.org record (Ts = 4 s, levels in sensor volts).
//   - GenerateBinarySystem: the binary-output system of Bemporad, Sec. 5.5
//     (ALGORITHMS.md §2.7 item 5.5).
//   - GenerateNarxLags: a NARX system with three known lags, for lag
//     selection (which regressors a sparse model keeps).
//
// Samples are columns: u is n_u × N, y is n_y × N, states is n_x × N.
// Every generator is deterministic for a given seed on every platform: the
// random numbers come from std::mt19937_64 with Sparrow's own uniform and
// Box-Muller transforms (core/util/random.h). Inputs and noise use separate
// streams derived from the seed, so changing a noise level leaves the input
// sequence unchanged.
//
// Thread safety: all functions are pure and may be called concurrently.
#ifndef SPARROW_CORE_DATA_SYNTHETIC_H_
#define SPARROW_CORE_DATA_SYNTHETIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sparrow::core::data {

// One simulated record. Column k of every matrix is sample k.
struct SyntheticSequence {
  Eigen::MatrixXd u;  // n_u × N inputs.
  Eigen::MatrixXd y;  // n_y × N measured outputs (with measurement noise).
  std::vector<std::string> input_names;   // n_u names.
  std::vector<std::string> output_names;  // n_y names.
  // n_x × N true states x(k) (with process noise, without measurement noise),
  // for tests and diagnostics; a model is trained on u and y only.
  Eigen::MatrixXd states;
  std::vector<std::string> state_names;  // n_x names.
};

// Options of the cascaded-tanks simulator. The physical defaults come from a
// least-squares fit of this model to the benchmark's estimation record
// (uEst -> yEst, simulation RMSE 0.50 V); the input defaults reproduce the
// benchmark's excitation (a random-phase multisine, mean 2.8 V, standard
// deviation 1.0 V, flat spectrum on bins 1..19 of the 1024-sample record).
// With them the lower level spans roughly 1..10 V around a mean of 5.7 V
// (benchmark: 2.2..10 V, mean 5.6..5.7 V) and the upper tank overflows for
// about 4 % of the samples on average (3 of 200 seeded 1024-sample records
// have none; 8192 samples with seed 1 have 3.5 %).
struct CascadedTanksOptions {
  // Record length N. Default 1024 (the benchmark's); must be >= 2.
  int samples = 1024;
  // Standard deviation [V] of the white Gaussian measurement noise e on y.
  // Default 0; must be finite and >= 0. y is not clipped, so a noisy y may
  // leave [0, lower_tank_top].
  double noise_std = 0.0;
  // Seed of the input phases and of the noise.
  uint64_t seed = 1;
  // Sampling time Ts [s]; the input is held constant (zero-order hold) over
  // each period. Default 4 (the benchmark's); must be finite and > 0.
  double sample_time = 4.0;

  // --- Physical constants of SBDL eq. (16), levels and input in volts. -----
  // k1 [V^0.5/s]: outflow of the upper tank, -k1 sqrt(x1). Default 0.058.
  double upper_outflow_gain = 0.058;
  // k2 [V^0.5/s]: inflow of the lower tank from the upper tank's outlet,
  // +k2 sqrt(x1). k2 / k1 is the ratio of the tank cross sections.
  // Default 0.051.
  double lower_inflow_gain = 0.051;
  // k3 [V^0.5/s]: outflow of the lower tank, -k3 sqrt(x2). Default 0.050.
  double lower_outflow_gain = 0.050;
  // k4 [1/s]: pump inflow into the upper tank, +k4 u. Default 0.048.
  // All four gains must be finite and > 0.
  double pump_gain = 0.048;
  // Level [V] at which the upper tank overflows (x1 is held there while the
  // net inflow is positive). Default 10 (the sensor range); finite, > 0.
  double upper_tank_top = 10.0;
  // Level [V] at which the lower tank overflows; its overflow is lost.
  // Default 10; finite, > 0.
  double lower_tank_top = 10.0;
  // Fraction of the upper tank's overflow that falls into the lower tank (the
  // rest goes back to the reservoir). Default 0.9 (the fit above prefers
  // 0.75..1); must lie in [0, 1].
  double overflow_fraction = 0.9;
  // Initial levels x1(0), x2(0) [V]. Defaults 5, 5 (the benchmark records
  // start near y = 5 V); must lie in [0, top] of their tank.
  double initial_upper_level = 5.0;
  double initial_lower_level = 5.0;
  // Standard deviation [V] of the process noise w1, w2, applied as a Gaussian
  // increment to each level once per sample period (a discrete-time version
  // of the w terms of eq. (16)). Default 0; must be finite and >= 0.
  double process_noise_std = 0.0;
  // Classical Runge-Kutta (RK4) steps per sample period. Default 10
  // (0.4 s steps for the ~100 s time constants of the tanks); must be >= 1.
  int rk4_substeps = 10;

  // --- Input signal (GenerateCascadedTanks only). ----------------------------
  // u(k) = input_mean + A sum_{j=1..J} cos(2 pi j k / N + phi_j), clipped at
  // 0 V (a pump cannot run backwards): a random-phase multisine whose period
  // is the whole record, with phases phi_j ~ U[0, 2 pi) and equal amplitudes
  // A = input_std sqrt(2 / J), so the unclipped signal has exactly this mean
  // and standard deviation. J = floor(input_bandwidth_hz N Ts), at least 1
  // and below N / 2. Cost O(N J).
  // Mean [V]; default 2.8; must be finite.
  double input_mean = 2.8;
  // Standard deviation [V]; default 1.0; must be finite and >= 0.
  double input_std = 1.0;
  // Highest excited frequency [Hz]; default 19 / 4096 Hz (bins 1..19 of the
  // benchmark record); must be > 0 and below the Nyquist frequency 1/(2 Ts).
  double input_bandwidth_hz = 19.0 / 4096.0;

  // InvalidArgument naming the field, its value and the constraint it breaks.
  absl::Status Validate() const;
};

// Simulates the cascaded tanks (SBDL eq. (16) plus overflow) driven by a
// random-phase multisine, see CascadedTanksOptions. Returns u (1 × N, "u"),
// y (1 × N, "y": lower level plus measurement noise) and states (2 × N,
// "x1" upper level, "x2" lower level). Errors: options.Validate().
absl::StatusOr<SyntheticSequence> GenerateCascadedTanks(
    const CascadedTanksOptions& options);

// As GenerateCascadedTanks, but driven by a given input u (1 × N, N >= 1,
// finite values in volts), e.g. a constant for a step test or a measured
// benchmark input. options.samples and the input_* fields are not used; the
// seed drives only the noise.
//
// Model, with levels x1 (upper) and x2 (lower) clamped to [0, top]:
//   dx1/dt = k4 u - k1 sqrt(x1)                        (0 while overflowing)
//   dx2/dt = k2 sqrt(x1) + (k2/k1) f s - k3 sqrt(x2)   (0 while overflowing)
// where s = k4 u - k1 sqrt(x1) > 0 is the upper tank's overflow rate while
// x1 = top and f = overflow_fraction (k2/k1 converts a level rate of the upper
// tank into one of the lower tank). Without overflow, a constant u has the
// steady state x1* = (k4 u / k1)^2, x2* = (k2 / k3)^2 x1*.
// Sample k holds x(t_k), t_k = k Ts, and y(k) = x2(t_k) + e(k); u(k) acts on
// [t_k, t_{k+1}).
// Errors: options.Validate(); InvalidArgument if u is not one row, is empty or
// holds a non-finite value.
absl::StatusOr<SyntheticSequence> SimulateCascadedTanks(
    const CascadedTanksOptions& options, const Eigen::MatrixXd& u);

// Options of the binary-output system of Bemporad Sec. 5.5.
struct BinarySystemOptions {
  // Record length N. Default 2000 (the paper's: 1000 training + 1000 test);
  // must be >= 2.
  int samples = 2000;
  // sigma_n: standard deviation of both the process noise xi (each state) and
  // the output-threshold noise zeta. The paper uses 0, 0.05 and 0.2. Default
  // 0; must be finite and >= 0.
  double noise_std = 0.0;
  // Seed of the input and of the noise.
  uint64_t seed = 1;

  // InvalidArgument naming the field, its value and the constraint it breaks.
  absl::Status Validate() const;
};

// Simulates, from x(0) = 0 (ALGORITHMS.md §2.7 item 5.5),
//   x(k+1) = A (x(k) o (0.9 + 0.1 sin x(k))) + b u(k) (1 - u(k)^3) + xi(k),
//   y(k)   = 1 if c (x(k) + x(k)^3 / 3) - 4 + zeta(k) >= 0, else 0,
// with A = [0.8 0.2 -0.1; 0 0.9 0.1; 0.1 -0.1 0.7], b = [-1; 0.5; 1],
// c = [-2 1.5 0.5], elementwise sin and cube. u(0) ~ U[0, 1); afterwards u is
// redrawn from U[0, 1) with probability 0.9 at each step and held otherwise.
// xi(k) (3 components) and zeta(k) are i.i.d. N(0, noise_std^2).
// Returns u (1 × N, "u"), y (1 × N, "y", values 0 or 1) and states (3 × N,
// "x1".."x3"). The share of ones averages 83 % at noise_std = 0, 82 % at
// 0.05 and 71 % at 0.2 over 500 seeds (single records vary by about +-7
// points; ALGORITHMS.md's one-seed figures are 86, 80 and 68 %).
// Errors: options.Validate().
absl::StatusOr<SyntheticSequence> GenerateBinarySystem(
    const BinarySystemOptions& options);

// Options of the known-lags NARX system.
struct NarxLagsOptions {
  int samples = 2000;  // >= 4
  // Standard deviation of white Gaussian noise added to the measured y (not
  // fed back); finite and >= 0.
  double noise_std = 0.0;
  uint64_t seed = 1;

  absl::Status Validate() const;
};

// Simulates, from y = 0 before the record,
//   y(t) = 0.7 y(t-1) + tanh(2 u(t-1)) - 0.5 u(t-3)^2,
// whose only lags are y(t-1), u(t-1) and u(t-3); u(t) ~ U[-1, 1) i.i.d.
// Returns u (1 × N, "u"), y (1 × N, "y", the noisy measurement) and states
// (1 × N, "y_true", noise-free).
absl::StatusOr<SyntheticSequence> GenerateNarxLags(
    const NarxLagsOptions& options);

// Those lags, named as a narx_mlp names its regressors (BuildNarxRegressors):
// what lag selection on GenerateNarxLags' data should keep.
inline constexpr const char* kNarxLagsTrueLags[] = {"y(t-1)", "u(t-1)",
                                                    "u(t-3)"};

}  // namespace sparrow::core::data

#endif  // SPARROW_CORE_DATA_SYNTHETIC_H_
