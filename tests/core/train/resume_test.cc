// Resume reproduces: for each optimizer, a run checkpointed at a report and
// resumed from that checkpoint ends with the model of the uninterrupted run,
// bit for bit, and reports the same losses after the checkpoint. Validation
// data is present, so the trainer's choice of the best iterate is resumed too.
#include "core/train/resume.h"

#include <string>
#include <vector>

#include "core/data/synthetic.h"
#include "core/train/stages.h"
#include "core/train/trainer.h"
#include "gtest/gtest.h"
#include "tests/core/train/testing/small_problems.h"

namespace sparrow::core {
namespace {

// Keeps the checkpoint of every report (of an attempt after `before`
// iterations) and aborts at iteration `stop_at` (never when 0), as a sparrowd
// shutdown does. Records the reported (iteration, loss) pairs.
class Checkpointer : public IterationCallback {
 public:
  explicit Checkpointer(int stop_at, int before = 0)
      : stop_at_(stop_at), before_(before) {}
  CallbackResult OnIteration(IterationRecord* r) override {
    KeepCheckpoint(*r, before_, 0.0, &point);
    if (!r->stage_start) losses.emplace_back(point.iteration, r->loss);
    return point.iteration == stop_at_ ? CallbackResult::kAbort
                                       : CallbackResult::kContinue;
  }
  ResumePoint point;
  std::vector<std::pair<int, double>> losses;

 private:
  int stop_at_;
  int before_;
};

data::SequenceData Tanks(int samples, uint64_t seed) {
  data::CascadedTanksOptions o;
  o.samples = samples;
  o.noise_std = 0.02;
  o.seed = seed;
  auto g = data::GenerateCascadedTanks(o);
  EXPECT_TRUE(g.ok()) << g.status();
  data::SequenceData s;
  s.n_u = 1;
  s.n_y = 1;
  s.input_names = {"u"};
  s.output_names = {"y"};
  s.traces.push_back({g->u, g->y});
  return s;
}

TrainData SequenceData() {
  TrainData d;
  d.train_seq = Tanks(300, 1);
  d.validation_seq = Tanks(200, 2);
  return d;
}

TrainData TableData() { return testing::SineTables(300, 100, 0); }

TrainConfig RnnConfig(OptimizerOptions optimizer) {
  TrainConfig c = testing::SmallRnnConfig();
  c.optimizer = std::move(optimizer);
  Stop(c.optimizer).max_iterations = 24;
  Stop(c.optimizer).tolerance = 0.0;
  return c;
}

TrainConfig MlpConfig(OptimizerOptions optimizer) {
  TrainConfig c;
  c.model.kind = MlpKind{};
  c.model.hidden = {6, 6};
  c.model.activation = Activation::kSigmoid;
  c.model.bias = false;
  c.optimizer = std::move(optimizer);
  Stop(c.optimizer).max_iterations = 12;
  c.seed = 5;
  return c;
}

// Runs `config` uninterrupted and interrupted at `stop_at` then resumed from
// the checkpoint there; both must end at the same model, bit for bit.
void ExpectResumeReproduces(const std::string& name, const TrainConfig& config,
                            const TrainData& data, int stop_at) {
  SCOPED_TRACE(name);
  Checkpointer whole(0);
  auto uninterrupted = Train(config, data, &whole);
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status();
  ASSERT_GT(uninterrupted->summary.iterations, stop_at)
      << uninterrupted->summary.BriefReport();

  Checkpointer first(stop_at);
  auto interrupted = Train(config, data, &first);
  ASSERT_TRUE(interrupted.ok()) << interrupted.status();
  ASSERT_EQ(first.point.iteration, stop_at);
  TrainConfig resumed_config = config;
  ASSERT_TRUE(Resume(first.point, &resumed_config).ok());
  Checkpointer second(0, stop_at);
  auto resumed = Train(resumed_config, data, &second);
  ASSERT_TRUE(resumed.ok()) << resumed.status();

  EXPECT_EQ(resumed->model.params, uninterrupted->model.params)
      << "max difference "
      << (resumed->model.params - uninterrupted->model.params)
             .cwiseAbs()
             .maxCoeff();
  std::vector<std::pair<int, double>> after;
  for (const auto& [iteration, loss] : whole.losses) {
    if (iteration > stop_at) after.emplace_back(iteration, loss);
  }
  EXPECT_EQ(second.losses, after);
  EXPECT_EQ(resumed->metrics.validation_rmse,
            uninterrupted->metrics.validation_rmse);
}

TEST(ResumeTest, NailsReproduces) {
  ExpectResumeReproduces("nails", RnnConfig(NailsOptions()), SequenceData(),
                         10);
}

TEST(ResumeTest, NailmReproduces) {
  ExpectResumeReproduces("nailm", RnnConfig(NailmOptions()), SequenceData(),
                         10);
  // The linear part is fitted at every start; a resume keeps the iterate's.
  TrainConfig c = RnnConfig(NailmOptions());
  std::get<StateSpaceRnnKind>(c.model.kind).rnn.linear = true;
  ExpectResumeReproduces("nailm, linear part", c, SequenceData(), 10);
}

// ADMM (a non-smooth penalty) resumes from its state: theta, the scaled dual
// u, NAILM's damping and, with keep_best, its best iterate.
TEST(ResumeTest, AdmmReproduces) {
  using Kind = TrainConfig::Penalty::Kind;
  TrainConfig l1 = RnnConfig(NailsOptions());
  l1.penalty.kind = Kind::kL1;
  l1.penalty.tau = 0.05;
  l1.admm.stop.max_iterations = 16;
  ExpectResumeReproduces("nails, admm l1", l1, SequenceData(), 7);

  TrainConfig group = RnnConfig(NailmOptions());
  group.penalty.kind = Kind::kGroupLasso;
  group.penalty.tau = 0.02;
  group.admm.stop.max_iterations = 16;
  group.admm.inner_epochs = 2;
  group.admm.keep_best = true;
  ExpectResumeReproduces("nailm, admm group lasso, keep best", group,
                         SequenceData(), 9);
}

TEST(ResumeTest, AdamReproduces) {
  AdamOptions adam;
  adam.learning_rate = 0.01;
  TrainConfig c = RnnConfig(adam);
  c.bptt_window = 50;
  ExpectResumeReproduces("adam, truncated BPTT", c, SequenceData(), 10);
  c = MlpConfig(adam);
  c.batch_size = 32;
  ExpectResumeReproduces("adam, minibatches", c, TableData(), 5);
  Stop(c.optimizer).report_every = 3;
  ExpectResumeReproduces("adam, a report every 3 epochs", c, TableData(), 6);
  SgdOptions sgd;
  sgd.learning_rate = 0.05;
  sgd.momentum = 0.9;
  c = MlpConfig(sgd);
  c.batch_size = 32;
  ExpectResumeReproduces("sgd with momentum", c, TableData(), 5);
}

TEST(ResumeTest, LbfgsReproduces) {
  ExpectResumeReproduces("lbfgs", RnnConfig(LbfgsOptions()), SequenceData(),
                         10);
  LbfgsOptions short_memory;
  short_memory.memory = 3;  // the checkpoint holds a full ring of pairs
  ExpectResumeReproduces("lbfgs, memory 3", RnnConfig(short_memory),
                         SequenceData(), 10);
}

TEST(ResumeTest, B2ldReproduces) {
  B2ldOptions b2ld;
  ExpectResumeReproduces("b2ld", MlpConfig(b2ld), TableData(), 5);
  b2ld.order = LayerOrder::kReshuffled;
  ExpectResumeReproduces("b2ld, reshuffled layers", MlpConfig(b2ld),
                         TableData(), 5);
}

TEST(ResumeTest, BlingReproduces) {
  BlingOptions bling;
  bling.batch_size = 50;
  ExpectResumeReproduces("bling", MlpConfig(bling), TableData(), 5);
  bling.minibatch = MinibatchOrder::kReshuffled;
  ExpectResumeReproduces("bling, reshuffled minibatches", MlpConfig(bling),
                         TableData(), 5);
}

TEST(ResumeTest, SbdlReproduces) {
  SbdlOptions sbdl;
  sbdl.inner_epochs = 15;
  sbdl.learning_rate = 0.01;
  sbdl.stall_iterations = 0;
  TrainConfig c = MlpConfig(sbdl);
  c.batch_size = 64;
  ExpectResumeReproduces("sbdl, proximal Adam", c, TableData(), 4);
  sbdl.inner = SbdlOptions::Inner::kProximalNewton;
  sbdl.stall_iterations = 3;
  ExpectResumeReproduces("sbdl, proximal Newton", MlpConfig(sbdl), TableData(),
                         4);
}

// A multi-stage run resumes in the stage of its checkpoint: in the first, in
// the second, and at the start of the second (the record between stages).
TEST(ResumeTest, AMultiStageRunReproducesInEveryStage) {
  AdamOptions adam;
  adam.learning_rate = 0.01;
  adam.stop.max_iterations = 8;
  adam.stop.tolerance = 0.0;
  NailmOptions nailm;
  nailm.stop.max_iterations = 10;
  nailm.stop.tolerance = 0.0;
  TrainConfig c = RnnConfig(adam);
  c.stages.resize(2);
  c.stages[0].optimizer = adam;
  c.stages[1].optimizer = nailm;
  UseStage(c.stages[0], &c);
  ExpectResumeReproduces("in the first stage", c, SequenceData(), 5);
  ExpectResumeReproduces("at the start of the second", c, SequenceData(), 8);
  ExpectResumeReproduces("in the second stage", c, SequenceData(), 12);

  // A checkpoint of the first stage's last iteration, taken before the
  // second stage started: the resumed run goes on in the second stage.
  class LastOfStage : public IterationCallback {
   public:
    CallbackResult OnIteration(IterationRecord* r) override {
      if (r->iteration == 8 && !r->stage_start) {
        KeepCheckpoint(*r, 0, 0.0, &point);
      }
      return CallbackResult::kContinue;
    }
    ResumePoint point;
  } last;
  auto whole = Train(c, SequenceData(), &last);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(last.point.iteration, 8);
  ASSERT_EQ(last.point.stage, 0);
  TrainConfig resumed = c;
  ASSERT_TRUE(Resume(last.point, &resumed).ok());
  EXPECT_EQ(resumed.stage_offset, 1);
  auto rest = Train(resumed, SequenceData(), nullptr);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->summary.iterations, 10);
  EXPECT_EQ(rest->model.params, whole->model.params);
  EXPECT_NE(rest->summary.message.find("stage 1 ended before a restart"),
            std::string::npos)
      << rest->summary.message;
}

// A best iterate from before the checkpoint that no later one beats stays the
// model: the resumed run goes on comparing against it.
TEST(ResumeTest, TheBestIterateBeforeTheCheckpointStaysTheModel) {
  TrainConfig c = RnnConfig(NailmOptions());
  const TrainData data = SequenceData();
  Checkpointer first(3);
  ASSERT_TRUE(Train(c, data, &first).ok());
  ResumePoint p = first.point;
  ASSERT_GT(p.best_params.size(), 0);
  p.best_params = Eigen::VectorXd::Constant(p.params.size(), 0.125);
  p.best_validation_metric = 0.0;  // no iterate can beat it
  ASSERT_TRUE(Resume(p, &c).ok());
  auto resumed = Train(c, data, nullptr);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->model.params, p.best_params);
  // A best iterate that does not fit the model is refused.
  c.resume_best_params = Eigen::VectorXd::Zero(2);
  EXPECT_FALSE(Train(c, data, nullptr).ok());
}

TEST(ResumeTest, RlsReproduces) {
  TrainConfig c = MlpConfig(RlsOptions());
  c.batch_size = 32;
  ExpectResumeReproduces("rls, all layers", c, TableData(), 5);
}

// A checkpoint whose optimizer state does not fit the optimizer (here one
// value short) is refused, not continued from fresh moments or P matrices.
TEST(ResumeTest, RefusesAnOptimizerStateThatDoesNotFit) {
  TrainConfig adam = MlpConfig(AdamOptions());
  adam.batch_size = 32;
  SgdOptions momentum;
  momentum.momentum = 0.9;
  TrainConfig sgd = MlpConfig(momentum);
  sgd.batch_size = 32;
  TrainConfig rls = MlpConfig(RlsOptions());
  rls.batch_size = 32;
  SbdlOptions sbdl_options;
  sbdl_options.inner_epochs = 5;
  sbdl_options.stall_iterations = 0;
  TrainConfig sbdl = MlpConfig(sbdl_options);
  sbdl.batch_size = 64;
  TrainConfig lbfgs = MlpConfig(LbfgsOptions());
  for (const TrainConfig& c : {adam, sgd, rls, sbdl, lbfgs}) {
    SCOPED_TRACE(OptimizerName(c.optimizer));
    Checkpointer first(4);
    ASSERT_TRUE(Train(c, TableData(), &first).ok());
    ASSERT_GT(first.point.state.size(), 1);
    ResumePoint p = first.point;
    p.state.conservativeResize(p.state.size() - 1);
    TrainConfig resumed = c;
    ASSERT_TRUE(Resume(p, &resumed).ok());
    auto r = Train(resumed, TableData(), nullptr);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
    EXPECT_NE(r.status().message().find("does not fit"), std::string::npos)
        << r.status();
  }
}

// The same for ADMM's state (NAILM under group Lasso), which holds the split
// parameters, the dual, the damping and the best loss.
TEST(ResumeTest, RefusesAnAdmmStateThatDoesNotFit) {
  TrainConfig c = RnnConfig(NailmOptions());
  c.penalty.kind = TrainConfig::Penalty::Kind::kGroupLasso;
  c.penalty.tau = 0.02;
  c.admm.stop.max_iterations = 8;
  Checkpointer first(3);
  ASSERT_TRUE(Train(c, SequenceData(), &first).ok());
  ASSERT_GT(first.point.state.size(), 1);
  ResumePoint p = first.point;
  p.state.conservativeResize(p.state.size() + 1);
  p.state(p.state.size() - 1) = 0.0;
  TrainConfig resumed = c;
  ASSERT_TRUE(Resume(p, &resumed).ok());
  auto r = Train(resumed, SequenceData(), nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find("optimizer.nailm state"),
            std::string::npos)
      << r.status();
}

// A checkpoint that no run can have written is refused with DATA_LOSS.
TEST(ResumeTest, RefusesImpossibleCheckpoints) {
  TrainConfig c = RnnConfig(NailmOptions());
  ResumePoint p;
  p.params = Eigen::VectorXd::Zero(3);
  p.iteration = -1;
  EXPECT_EQ(Resume(p, &c).code(), absl::StatusCode::kDataLoss);
  p.iteration = 1;
  p.state = Eigen::VectorXd::Constant(1, std::nan(""));
  EXPECT_EQ(Resume(p, &c).code(), absl::StatusCode::kDataLoss);
  p.state.resize(0);
  p.best_params = Eigen::VectorXd::Zero(3);
  p.best_validation_metric = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Resume(p, &c).code(), absl::StatusCode::kDataLoss);
  p.best_validation_metric = 0.5;
  EXPECT_TRUE(Resume(p, &c).ok());
  EXPECT_EQ(c.resume_best_metric, 0.5);
}

}  // namespace
}  // namespace sparrow::core
