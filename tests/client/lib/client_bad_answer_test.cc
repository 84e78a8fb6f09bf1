// The client never aborts on a server's answer: a server (here a fake one)
// that answers with a string field that is not UTF-8 gets an error back from
// the client, not a crash. gRPC 1.51's typed ClientWriter asserted on such an
// upload answer (the `sparrow upload` CLI exited with 134).
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sparrow/v1/datasets.grpc.pb.h"

namespace sparrow::client {
namespace {

// A Dataset that protobuf serializes (logging an error) but no peer parses.
v1::Dataset PoisonedDataset() {
  v1::Dataset d;
  d.set_id("abc");
  d.add_columns("u\xff\xfe");
  return d;
}

// Answers every Get with the poisoned dataset (NOT_FOUND for the client's
// pre-upload lookup) and every upload with it.
class PoisonedDatasets final : public v1::DatasetService::CallbackService {
 public:
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const v1::GetDatasetRequest* request,
                                v1::Dataset* response) override {
    auto* reactor = context->DefaultReactor();
    if (request->id() != "abc") {
      reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, "no"));
    } else {
      *response = PoisonedDataset();
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

  grpc::ServerReadReactor<v1::UploadDatasetRequest>* Upload(
      grpc::CallbackServerContext*,
      v1::UploadDatasetResponse* response) override {
    class Reactor : public grpc::ServerReadReactor<v1::UploadDatasetRequest> {
     public:
      explicit Reactor(v1::UploadDatasetResponse* response) {
        *response->mutable_dataset() = PoisonedDataset();
        StartRead(&chunk_);
      }
      void OnReadDone(bool ok) override {
        if (ok && !chunk_.finish()) {
          StartRead(&chunk_);
          return;
        }
        Finish(grpc::Status::OK);
      }
      void OnDone() override { delete this; }

     private:
      v1::UploadDatasetRequest chunk_;
    };
    return new Reactor(response);
  }
};

class ClientBadAnswerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ClientOptions o;
    o.address = absl::StrCat("127.0.0.1:", port);
    o.max_attempts = 1;
    auto client = Client::Connect(o);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }

  void TearDown() override { server_->Shutdown(); }

  PoisonedDatasets service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientBadAnswerTest, AnUnreadableUploadAnswerIsAnErrorNotAnAbort) {
  auto dataset = client_->Upload("u,y\n1,2\n", "d.csv");
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(dataset.status().message().find("cannot read"), std::string::npos)
      << dataset.status();
}

TEST_F(ClientBadAnswerTest, AnUnreadableUnaryAnswerSaysSo) {
  auto dataset = client_->GetDataset("abc");
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(dataset.status().message().find("cannot read"), std::string::npos)
      << dataset.status();
}

TEST_F(ClientBadAnswerTest, TextThatIsNotUtf8IsRefusedBeforeSending) {
  auto job = client_->GetJob("job-\xff");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("request.id"), std::string::npos)
      << job.status();
}

}  // namespace
}  // namespace sparrow::client
