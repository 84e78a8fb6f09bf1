// Writes the seed corpora of the fuzz targets into DIR/<target>/ (default
// fuzz/corpus): small CSVs in the accepted dialect, the small specs and a few
// examples/*.json, models and checkpoints trained from the small specs, and
// one request per RPC. Run it again when the formats change; the corpora are
// committed so that `make fuzz` starts from them.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/train/trainer.h"
#include "fuzz/fuzz_common.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "sparrow/v1/checkpoint.pb.h"
#include "sparrow/v1/datasets.pb.h"
#include "sparrow/v1/jobs.pb.h"
#include "sparrow/v1/model_service.pb.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"
#include "translate/model.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = sparrow::v1;

void Write(const fs::path& dir, const std::string& name,
           const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The RPC target's input: a method byte, then the request.
std::string Rpc(int method, const google::protobuf::Message& request) {
  return std::string(1, static_cast<char>(method)) +
         request.SerializeAsString();
}

std::string UploadInput(const std::vector<v1::UploadDatasetRequest>& chunks) {
  std::string out(1, '\0');
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  for (const auto& c : chunks) {
    coded.WriteVarint32(static_cast<uint32_t>(c.ByteSizeLong()));
    c.SerializeToCodedStream(&coded);
  }
  coded.Trim();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path out =
      argc > 1 ? argv[1] : fs::path(SPARROW_SOURCE_DIR) / "fuzz" / "corpus";
  const fs::path examples = fs::path(SPARROW_SOURCE_DIR) / "examples";

  // CSV parser: the dialect's corners, each a few lines.
  const fs::path csv = out / "csv_fuzz";
  Write(csv, "small.csv", sparrow::fuzz::SmallCsv(6));
  Write(csv, "quoted_crlf_bom.csv",
        "\xEF\xBB\xBF\"uEst\",\"y \"\"1\"\"\"\r\n1.5,2\r\n-3e-2,4\r\n");
  Write(csv, "trailing_comma.csv", "u,y,\n1,2,\n3,4,\n\n");
  Write(csv, "categorical_missing.csv",
        "color,x,y\nred,1,NA\nblue,2,3\n\"red\",?,4\n10,  5\t,6\n");
  Write(csv, "errors.csv", "a,a\n1\n,\"x\nInf,nan,1e999\n");

  // Specs: the small specs and some examples of each model family.
  const fs::path spec = out / "spec_fuzz";
  for (int i = 0; i < sparrow::fuzz::kNumSmallSpecs; ++i) {
    Write(spec, absl::StrFormat("small_%d.json", i),
          sparrow::fuzz::kSmallSpecs[i]);
  }
  for (const char* name :
       {"demo.json", "damper_l1.json", "damper_group_lasso.json",
        "damper_quantized.json", "tanks_sbdl_sim.json", "bld_bank.json",
        "binary_system_nailm_s005.json", "tanks_group_lasso_onestep.json"}) {
    Write(spec, name, Read(examples / name));
  }

  // Models and checkpoints: trained from the small specs.
  const std::string data_csv = sparrow::fuzz::SmallCsv();
  for (int i = 0; i < sparrow::fuzz::kNumSmallSpecs; ++i) {
    auto spec_proto =
        sparrow::translate::ParseJobSpecJson(sparrow::fuzz::kSmallSpecs[i]);
    auto config = sparrow::translate::ToTrainConfig(*spec_proto);
    auto data =
        sparrow::translate::LoadTrainData(*spec_proto, *config, data_csv);
    if (!config.ok() || !data.ok()) {
      std::cerr << "small spec " << i << ": "
                << (config.ok() ? data.status() : config.status()) << "\n";
      return 1;
    }
    auto result = sparrow::core::Train(*config, *data, nullptr);
    if (!result.ok()) {
      std::cerr << "small spec " << i << ": " << result.status() << "\n";
      return 1;
    }
    Write(
        out / "model_fuzz", absl::StrFormat("model_%d.pb", i),
        sparrow::translate::ToProto(*spec_proto, *result).SerializeAsString());
    v1::JobCheckpoint checkpoint;
    checkpoint.set_iteration(1);
    checkpoint.set_elapsed_seconds(0.01);
    for (double p : result->model.params) checkpoint.add_params(p);
    if (std::holds_alternative<sparrow::core::AdamOptions>(config->optimizer) ||
        std::holds_alternative<sparrow::core::SgdOptions>(config->optimizer)) {
      // Update count, then the first and second moments.
      checkpoint.add_optimizer_state(3);
      for (int k = 0; k < 2 * result->model.params.size(); ++k) {
        checkpoint.add_optimizer_state(1e-3 * (k % 7));
      }
    }
    checkpoint.set_step_size(0.1);
    Write(
        out / "checkpoint_fuzz", absl::StrFormat("checkpoint_%d.pb", i),
        std::string(1, static_cast<char>(i)) + checkpoint.SerializeAsString());
  }

  // RPCs: one well-formed request per method (see rpc_fuzz.cc for the
  // placeholders).
  const fs::path rpc = out / "rpc_fuzz";
  {
    const std::string content = sparrow::fuzz::SmallCsv(8);
    v1::UploadDatasetRequest first, last;
    first.set_name("small.csv");
    first.set_data(content.substr(0, 40));
    last.set_offset(40);
    last.set_data(content.substr(40));
    last.set_finish(true);
    last.set_sha256("@sha");
    Write(rpc, "upload_two_chunks", UploadInput({first, last}));
    v1::UploadDatasetRequest one;
    one.set_name("cat.csv");
    one.set_data("c,u,y\na,1,2\nb,3,4\na,5,6\n");
    one.set_finish(true);
    one.set_sha256("@sha");
    Write(rpc, "upload_one_chunk", UploadInput({one}));
  }
  v1::GetDatasetRequest get_dataset;
  get_dataset.set_id("@dataset");
  Write(rpc, "get_dataset", Rpc(1, get_dataset));
  v1::ListDatasetsRequest list_datasets;
  list_datasets.set_page_size(1);
  Write(rpc, "list_datasets", Rpc(2, list_datasets));
  for (int i = 0; i < 3; ++i) {
    v1::SubmitJobRequest submit;
    *submit.mutable_spec() =
        *sparrow::translate::ParseJobSpecJson(sparrow::fuzz::kSmallSpecs[i]);
    submit.mutable_spec()->mutable_data()->set_dataset_id("@dataset");
    if (i == 0) submit.set_request_id("r1");
    submit.set_priority(i);
    Write(rpc, absl::StrFormat("submit_%d", i), Rpc(3, submit));
  }
  v1::GetJobRequest get_job;
  get_job.set_id("@job");
  Write(rpc, "get_job", Rpc(4, get_job));
  v1::ListJobsRequest list_jobs;
  list_jobs.set_page_size(2);
  list_jobs.set_state(v1::Job::SUCCEEDED);
  Write(rpc, "list_jobs", Rpc(5, list_jobs));
  v1::CancelJobRequest cancel;
  cancel.set_id("@job");
  Write(rpc, "cancel_job", Rpc(6, cancel));
  v1::WatchJobRequest watch;
  watch.set_id("@job");
  watch.set_after_seq(2);
  Write(rpc, "watch_job", Rpc(7, watch));
  v1::GetModelRequest get_model;
  get_model.set_job_id("@job");
  Write(rpc, "get_model", Rpc(8, get_model));
  v1::ExportModelRequest export_model;
  export_model.set_job_id("@job");
  export_model.set_format(v1::ExportModelRequest::JSON);
  Write(rpc, "export_model", Rpc(9, export_model));
  v1::PredictRequest predict;
  predict.set_job_id("@job");
  predict.set_csv(sparrow::fuzz::SmallCsv(12));
  predict.set_one_step(true);
  Write(rpc, "predict", Rpc(10, predict));
  v1::DeleteDatasetRequest del;
  del.set_id("0123");
  Write(rpc, "delete_dataset", Rpc(11, del));
  std::cout << "seed corpora written to " << out.string() << "\n";
  return 0;
}
