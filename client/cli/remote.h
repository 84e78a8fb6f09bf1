// The `sparrow` subcommands that talk to sparrowd: upload, submit, watch,
// status, list, cancel, model get / export, predict JOB, health.
#ifndef SPARROW_CLIENT_CLI_REMOTE_H_
#define SPARROW_CLIENT_CLI_REMOTE_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/cli/common.h"
#include "client/cli/model_export.h"

namespace sparrow::cli {

// `predict JOB --input FILE ...` against the server (the local mode,
// `predict --local --model FILE`, lives in main.cc).
struct RemotePredictArgs {
  std::string job;
  std::string input;
  std::string images;  // instead of input: an IDX image file
  bool one_step = false;
  bool intervals = false;
  int x0_samples = 0;
  // --x0: where a state-space simulation starts (PredictRequest).
  v1::PredictRequest::InitialState initial_state =
      v1::PredictRequest::X0_ESTIMATE;
  std::vector<double> x0;
  std::string out;
  bool json = false;
};

class RemoteCommands {
 public:
  // Registers the subcommands on app.
  void AddTo(CLI::App* app);
  // Runs the parsed subcommand and returns its exit code; -1 when none of
  // these was given.
  int Run();
  int Predict(const RemotePredictArgs& args);
  // The connection flags of the shared predict command.
  ConnectionFlags& predict_connection() { return predict_connection_; }

 private:
  // The subcommands AddTo adds, in the order of `sparrow --help`: upload and
  // submit; watch, status, list and cancel; model get and health.
  void AddSubmitCommands(CLI::App* app);
  void AddJobCommands(CLI::App* app);
  void AddModelCommands(CLI::App* app);
  int Upload();
  int PredictImages(const RemotePredictArgs& args, client::Client* client);
  int Submit();
  int Watch(const std::string& job, int64_t after, bool json,
            client::Client* client);
  int Status();
  int List();
  int Cancel();
  int ModelGet();
  int Health();

  CLI::App* upload_ = nullptr;
  CLI::App* submit_ = nullptr;
  CLI::App* watch_ = nullptr;
  CLI::App* status_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* cancel_ = nullptr;
  CLI::App* model_ = nullptr;
  CLI::App* model_get_ = nullptr;
  ModelExportCommand model_export_;
  CLI::App* health_ = nullptr;

  ConnectionFlags upload_connection_, submit_connection_, watch_connection_,
      status_connection_, list_connection_, cancel_connection_,
      model_connection_, health_connection_, predict_connection_;
  std::string file_;  // upload
  std::vector<std::string> images_, labels_;
  std::string name_;
  std::string spec_path_;  // submit
  std::string data_path_;
  bool submit_watch_ = false;
  int priority_ = 0;
  std::string request_id_;
  std::string job_;  // watch, status, cancel, model get
  int64_t after_ = 0;
  std::string state_;  // list
  int page_size_ = 0;
  std::string page_token_;
  std::string model_out_;
  bool json_ = false;
};

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_REMOTE_H_
