// What a layer block costs in the block-layer decomposition methods (Palagi &
// Seccia, ALGORITHMS.md §4.2 "block-gradient economics"), against a full
// gradient of the same objective, on synthetic data (no file I/O):
//
//   8000 rows x 9 inputs (standard normal), one z-scored target, bias-free
//   sigmoid networks with a linear output, Glorot-normal weights (seed 1),
//   rho = 1e-3 / n: the [10x50] net (11 weight layers, 23000 weights) and the
//   [200,50,200] net (4 weight layers, 22000 weights).
//
//   BM_FullGradient/NET             LayeredObjective::Evaluate with gradient.
//   BM_BlockGradient/NET/POS        SetBlock + EvaluateBlock with gradient: a
//                                   B2LD block visit's first gradient (forward
//                                   below the block once, then forward from the
//                                   block and backward down to it).
//   BM_BlockEvaluation/NET/POS      EvaluateBlock with gradient after SetBlock
//                                   (outside the loop): what each L-BFGS
//                                   iteration of a block solve pays.
//   BM_BlockValue/NET/POS           EvaluateBlock without gradient after
//                                   SetBlock: an Armijo trial.
//   BM_BlockGradientSweep/NET       the first gradient of every block (what
//                                   one B2LD sweep pays before solving).
//   BM_IgStep/NET                   one IG minibatch step (128 rows: gather,
//                                   forward, full minibatch gradient, step).
//   BM_BlingStep/NET/ORDER          one BLInG minibatch step: every layer in
//                                   turn (backward or forward order), each
//                                   gradient at the partially updated point
//                                   after recomputing the layers from the last
//                                   changed one up.
//
// POS is first (layer 0), middle (layer L/2) or last (layer L-1). The counter
// x_full is the time per call divided by the time of one full gradient of the
// same net (x_full_sweep: divided by L full gradients), x_ig the time divided
// by one IG step; the references are medians of 15 timed calls measured in the
// same process before the first benchmark that needs them. Single thread.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "bench/bench_common.h"
#include "core/models/mlp.h"
#include "core/optim/bld/layered_objective.h"
#include "core/util/random.h"

namespace sparrow::core {
namespace {

constexpr int kRows = 8000;
constexpr int kInputs = 9;
constexpr int kBatch = 128;  // BlingOptions::batch_size default
constexpr int kReferenceCalls = 15;

// A smooth nonlinear target of standard normal inputs plus a little noise,
// both z-scored as the trainer would.
struct Data {
  Eigen::MatrixXd x, y;
};

const Data& SyntheticData() {
  static const Data* data = [] {
    auto* d = new Data;
    Rng rng(7);
    d->x.resize(kInputs, kRows);
    d->y.resize(1, kRows);
    for (int j = 0; j < kRows; ++j) {
      for (int i = 0; i < kInputs; ++i) d->x(i, j) = rng.Normal();
      const auto c = d->x.col(j);
      d->y(0, j) = std::sin(c(0)) + c(1) * c(2) + 0.5 * std::tanh(c(3) - c(4)) +
                   0.1 * rng.Normal();
    }
    bench::ZScoreRows(&d->x);
    bench::ZScoreRows(&d->y);
    return d;
  }();
  return *data;
}

struct Net {
  std::string name;
  std::vector<int> hidden;
};

const std::vector<Net>& Nets() {
  static const std::vector<Net> nets = {
      {"10x50", std::vector<int>(10, 50)},
      {"200,50,200", {200, 50, 200}},
  };
  return nets;
}

// A network, its parameters and its objective on the synthetic rows.
struct Setup {
  explicit Setup(const Net& net) {
    MlpSpec spec;
    spec.inputs = kInputs;
    spec.hidden = net.hidden;
    spec.outputs = 1;
    spec.hidden_activation = Activation::kSigmoid;
    spec.output_activation = Activation::kLinear;
    spec.bias = false;
    mlp = Mlp(spec);
    w.resize(mlp.num_params());
    Rng rng(1);
    mlp.Initialize(1.0, &rng, w.data());
    const Data& d = SyntheticData();
    objective = std::make_unique<LayeredObjective>(&mlp.network(), &d.x, &d.y,
                                                   1e-3 / mlp.num_params());
    order.resize(kRows);
    std::iota(order.begin(), order.end(), 0);
  }
  int layers() const { return objective->num_layers(); }
  Mlp mlp;
  Eigen::VectorXd w;
  std::unique_ptr<LayeredObjective> objective;
  std::vector<int> order;
};

int LayerAt(const Setup& s, const std::string& pos) {
  if (pos == "first") return 0;
  if (pos == "middle") return s.layers() / 2;
  return s.layers() - 1;
}

// Median wall time of kReferenceCalls calls of f after two warm-up calls.
template <typename F>
double MedianSeconds(F f) {
  f();
  f();
  std::vector<double> t(kReferenceCalls);
  for (double& s : t) {
    const auto start = std::chrono::steady_clock::now();
    f();
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

void IgStep(Setup& s, int h, double alpha, Eigen::VectorXd* g) {
  LayeredObjective& f = *s.objective;
  const int batches = kRows / kBatch;
  const int b = h % batches;
  f.SetMinibatch(s.order, b * kBatch, (b + 1) * kBatch);
  f.MinibatchForward(s.w, 0);
  f.MinibatchGradient(s.w, g);
  s.w -= (alpha / std::max(1e-3, std::min(1e6, g->norm()))) * *g;
}

// The body of MinimizeBling's layer loop (core/optim/bld/bld.cc).
void BlingStep(Setup& s, int h, bool backward, double alpha,
               Eigen::VectorXd* g) {
  LayeredObjective& f = *s.objective;
  const int batches = kRows / kBatch;
  const int b = h % batches;
  f.SetMinibatch(s.order, b * kBatch, (b + 1) * kBatch);
  f.MinibatchForward(s.w, 0);
  int changed = -1;
  for (int k = 0; k < s.layers(); ++k) {
    const int l = backward ? s.layers() - 1 - k : k;
    if (changed >= 0) f.MinibatchForward(s.w, changed);
    f.MinibatchBlockGradient(s.w, l, g);
    s.w.segment(f.block_offset(l), f.block_size(l)) -=
        (alpha / std::max(1e-3, std::min(1e6, g->norm()))) * *g;
    changed = l;
  }
}

// Reference times per net, measured once.
double FullGradientSeconds(int net) {
  static std::map<int, double> cache;
  auto it = cache.find(net);
  if (it != cache.end()) return it->second;
  Setup s(Nets()[net]);
  Eigen::VectorXd g;
  const double t = MedianSeconds([&] { s.objective->Evaluate(s.w, &g); });
  cache[net] = t;
  return t;
}

double IgStepSeconds(int net) {
  static std::map<int, double> cache;
  auto it = cache.find(net);
  if (it != cache.end()) return it->second;
  Setup s(Nets()[net]);
  Eigen::VectorXd g;
  int h = 0;
  // Tiny steps: the point stays where the other benchmarks measure.
  const double t = MedianSeconds([&] { IgStep(s, h++, 1e-9, &g); });
  cache[net] = t;
  return t;
}

// Times the benchmark loop itself for the x_* counters.
class LoopTimer {
 public:
  LoopTimer() : start_(std::chrono::steady_clock::now()) {}
  double PerIteration(const benchmark::State& state) const {
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
    return total / std::max<benchmark::IterationCount>(1, state.iterations());
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

void SetCommonCounters(benchmark::State& state, const Setup& s, int rows) {
  state.SetItemsProcessed(state.iterations() * rows);
  state.counters["params"] = s.mlp.num_params();
  state.counters["layers"] = s.layers();
}

void BM_FullGradient(benchmark::State& state, int net) {
  Setup s(Nets()[net]);
  Eigen::VectorXd g;
  const double full = FullGradientSeconds(net);
  LoopTimer timer;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.objective->Evaluate(s.w, &g));
    benchmark::ClobberMemory();
  }
  state.counters["x_full"] = timer.PerIteration(state) / full;
  SetCommonCounters(state, s, kRows);
}

void BM_BlockGradient(benchmark::State& state, int net, std::string pos) {
  Setup s(Nets()[net]);
  LayeredObjective& f = *s.objective;
  const int l = LayerAt(s, pos);
  const Eigen::VectorXd v = s.w.segment(f.block_offset(l), f.block_size(l));
  Eigen::VectorXd g;
  const double full = FullGradientSeconds(net);
  LoopTimer timer;
  for (auto _ : state) {
    f.SetBlock(s.w, l);
    benchmark::DoNotOptimize(f.EvaluateBlock(v, &g));
    benchmark::ClobberMemory();
  }
  state.counters["x_full"] = timer.PerIteration(state) / full;
  state.counters["layer"] = l;
  state.counters["block_params"] = f.block_size(l);
  SetCommonCounters(state, s, kRows);
}

void BM_BlockEvaluation(benchmark::State& state, int net, std::string pos,
                        bool with_gradient) {
  Setup s(Nets()[net]);
  LayeredObjective& f = *s.objective;
  const int l = LayerAt(s, pos);
  const Eigen::VectorXd v = s.w.segment(f.block_offset(l), f.block_size(l));
  Eigen::VectorXd g;
  f.SetBlock(s.w, l);
  const double full = FullGradientSeconds(net);
  LoopTimer timer;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.EvaluateBlock(v, with_gradient ? &g : nullptr));
    benchmark::ClobberMemory();
  }
  state.counters["x_full"] = timer.PerIteration(state) / full;
  state.counters["layer"] = l;
  state.counters["block_params"] = f.block_size(l);
  SetCommonCounters(state, s, kRows);
}

void BM_BlockGradientSweep(benchmark::State& state, int net) {
  Setup s(Nets()[net]);
  LayeredObjective& f = *s.objective;
  Eigen::VectorXd g, v;
  const double full = FullGradientSeconds(net);
  LoopTimer timer;
  for (auto _ : state) {
    for (int l = s.layers() - 1; l >= 0; --l) {
      f.SetBlock(s.w, l);
      v = s.w.segment(f.block_offset(l), f.block_size(l));
      benchmark::DoNotOptimize(f.EvaluateBlock(v, &g));
    }
    benchmark::ClobberMemory();
  }
  state.counters["x_full_sweep"] =
      timer.PerIteration(state) / (s.layers() * full);
  SetCommonCounters(state, s, kRows);
}

void BM_IgStep(benchmark::State& state, int net) {
  Setup s(Nets()[net]);
  Eigen::VectorXd g;
  const double ig = IgStepSeconds(net);
  int h = 0;
  LoopTimer timer;
  for (auto _ : state) {
    IgStep(s, h++, 1e-9, &g);
    benchmark::ClobberMemory();
  }
  state.counters["x_ig"] = timer.PerIteration(state) / ig;
  SetCommonCounters(state, s, kBatch);
}

void BM_BlingStep(benchmark::State& state, int net, bool backward) {
  Setup s(Nets()[net]);
  Eigen::VectorXd g;
  const double ig = IgStepSeconds(net);
  int h = 0;
  LoopTimer timer;
  for (auto _ : state) {
    BlingStep(s, h++, backward, 1e-9, &g);
    benchmark::ClobberMemory();
  }
  state.counters["x_ig"] = timer.PerIteration(state) / ig;
  SetCommonCounters(state, s, kBatch);
}

void RegisterAll() {
  for (int net = 0; net < static_cast<int>(Nets().size()); ++net) {
    const std::string n = Nets()[net].name;
    benchmark::RegisterBenchmark(("BM_FullGradient/" + n).c_str(),
                                 BM_FullGradient, net)
        ->Unit(benchmark::kMillisecond);
    for (const char* pos : {"first", "middle", "last"}) {
      const std::string suffix = n + "/" + pos;
      benchmark::RegisterBenchmark(("BM_BlockGradient/" + suffix).c_str(),
                                   BM_BlockGradient, net, std::string(pos))
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("BM_BlockEvaluation/" + suffix).c_str(),
                                   BM_BlockEvaluation, net, std::string(pos),
                                   true)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("BM_BlockValue/" + suffix).c_str(),
                                   BM_BlockEvaluation, net, std::string(pos),
                                   false)
          ->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark(("BM_BlockGradientSweep/" + n).c_str(),
                                 BM_BlockGradientSweep, net)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_IgStep/" + n).c_str(), BM_IgStep, net)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_BlingStep/" + n + "/backward").c_str(),
                                 BM_BlingStep, net, true)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_BlingStep/" + n + "/forward").c_str(),
                                 BM_BlingStep, net, false)
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace sparrow::core

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  sparrow::core::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
