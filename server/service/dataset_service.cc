#include "server/service/dataset_service.h"

#include <algorithm>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/csv.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "spdlog/spdlog.h"
#include "translate/images.h"
#include "translate/text.h"

namespace sparrow::server {

namespace {

// The dataset's name and column names go into string fields of every answer
// about it, which a client can only parse when they are UTF-8.
absl::Status CheckNames(absl::string_view name,
                        const std::vector<std::string>& columns) {
  for (size_t i = 0; i < columns.size(); ++i) {
    absl::Status s = translate::CheckUtf8(
        columns[i], absl::StrCat("column ", i + 1, " of the CSV header"));
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(s.message(),
                       "; re-save the file as UTF-8 or rename the column; "
                       "nothing was stored"));
    }
  }
  return translate::CheckUtf8(name, "the dataset name");
}

// The rows and columns (CSV) or images and their shape (image dataset) of
// an upload, which must parse.
absl::StatusOr<v1::Dataset> Describe(absl::string_view content) {
  v1::Dataset meta;
  if (translate::IsImageDataset(content)) {
    auto images = translate::ParseImageDataset(content);
    if (!images.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the upload is not a valid Sparrow image dataset: ",
                       images.status().message(),
                       " (make one with sparrow upload --images FILE "
                       "--labels FILE); nothing was stored"));
    }
    meta.set_format(v1::DATASET_FORMAT_IMAGES);
    meta.set_rows(images->size());
    meta.mutable_image_shape()->set_channels(images->channels);
    meta.mutable_image_shape()->set_height(images->height);
    meta.mutable_image_shape()->set_width(images->width);
    if (!images->labels.empty()) {
      meta.set_classes(
          1 + *std::max_element(images->labels.begin(), images->labels.end()));
    }
    return meta;
  }
  // Structure only, as a local run reads the file: each job converts the
  // columns it selects, so a text column, an "NA" or an empty cell elsewhere
  // is fine; a bad value in a column a job selects fails that job, with the
  // line and column, when its worker reads the data.
  auto shape = core::data::CheckCsvStructure(
      std::string_view(content.data(), content.size()));
  if (!shape.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the upload is not a CSV file Sparrow can read: ",
        shape.status().message(),
        " (a header line, then one line per row with a field for every "
        "column; image datasets start with the line SPARROW-IMAGES 1); "
        "nothing was stored"));
  }
  meta.set_format(v1::DATASET_FORMAT_CSV);
  meta.set_rows(shape->rows);
  for (const std::string& c : shape->header) meta.add_columns(c);
  return meta;
}

// Streams the chunks of one upload into the spool (UploadSpool: within the
// bytes-in-flight caps); nothing is stored unless the offsets are contiguous,
// the size is within the limit, the checksum matches and the content parses:
// a well-formed CSV with UTF-8 names, or an image dataset.
class UploadReactor : public grpc::ServerReadReactor<v1::UploadDatasetRequest> {
 public:
  UploadReactor(const ServiceDeps& deps, grpc::CallbackServerContext* context,
                v1::UploadDatasetResponse* response)
      : deps_(deps), active_(deps.active_calls), response_(response) {
    auto tenant = Admit(deps_, context);
    if (!tenant.ok()) {
      Done(tenant.status());
      return;
    }
    tenant_ = *tenant;
    auto upload = deps_.uploads->Begin(tenant_);
    if (!upload.ok()) {
      Done(upload.status());
      return;
    }
    upload_ = *std::move(upload);
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Done(absl::InvalidArgumentError(
          "the upload ended without a last message (finish = true with the "
          "SHA-256 of the content); nothing was stored"));
      return;
    }
    absl::Status s = Accept();
    if (!s.ok()) {
      Done(s);
      return;
    }
    if (chunk_.finish()) {
      Done(Complete());
      return;
    }
    StartRead(&chunk_);
  }

  void OnDone() override { delete this; }

 private:
  absl::Status Accept() {
    if (received_chunks_++ == 0) name_ = chunk_.name();
    const int64_t have = upload_->size();
    if (chunk_.offset() != have) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "chunk %d has offset %d but %d bytes were received before it; "
          "chunks must be sent in order, each at the offset where the "
          "previous one ended; nothing was stored",
          received_chunks_, chunk_.offset(), have));
    }
    if (have + static_cast<int64_t>(chunk_.data().size()) >
        deps_.limits->max_upload_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the upload exceeds %d bytes, the largest dataset this server "
          "accepts (sparrowd --max-upload-bytes); nothing was stored",
          deps_.limits->max_upload_bytes));
    }
    return upload_->Append(chunk_.data());
  }

  absl::Status Complete() {
    const std::string sha = upload_->FinishSha256Hex();
    const std::string claimed = absl::AsciiStrToLower(chunk_.sha256());
    if (claimed.empty()) {
      return absl::InvalidArgumentError(
          "the last message (finish = true) must carry sha256, the hex "
          "SHA-256 of the whole content; nothing was stored");
    }
    if (claimed != sha) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sha256 mismatch: the client sent ", claimed,
          " but the received bytes hash to ", sha,
          "; the upload was corrupted or incomplete; nothing was stored"));
    }
    SPARROW_ASSIGN_OR_RETURN(const absl::string_view content,
                             upload_->Content());
    SPARROW_ASSIGN_OR_RETURN(v1::Dataset meta, Describe(content));
    SPARROW_RETURN_IF_ERROR(
        CheckNames(name_, std::vector<std::string>(meta.columns().begin(),
                                                   meta.columns().end())));
    meta.set_id(sha);
    meta.set_name(name_);
    meta.set_size_bytes(static_cast<int64_t>(content.size()));
    *meta.mutable_create_time() =
        google::protobuf::util::TimeUtil::GetCurrentTime();
    bool existed = false;
    SPARROW_ASSIGN_OR_RETURN(
        *response_->mutable_dataset(),
        deps_.store->PutDataset(tenant_, meta, content, &existed));
    response_->set_already_existed(existed);
    if (!existed) {
      spdlog::info("dataset {} tenant {}: stored ({} bytes, {} rows)", sha,
                   tenant_, content.size(), meta.rows());
    }
    return absl::OkStatus();
  }

  void Done(const absl::Status& status) {
    upload_.reset();  // the spool file goes, and its bytes in flight
    const grpc::Status s = ToGrpcStatus(status);
    deps_.metrics->CountRpc("DatasetService.Upload", s.error_code());
    Finish(s);
  }

  const ServiceDeps& deps_;
  ActiveCall active_;
  v1::UploadDatasetResponse* response_;
  std::string tenant_;
  std::string name_;
  std::unique_ptr<SpooledUpload> upload_;
  int received_chunks_ = 0;
  v1::UploadDatasetRequest chunk_;
};

}  // namespace

grpc::ServerReadReactor<v1::UploadDatasetRequest>* DatasetService::Upload(
    grpc::CallbackServerContext* context, v1::UploadDatasetResponse* response) {
  return new UploadReactor(deps_, context, response);
}

grpc::ServerUnaryReactor* DatasetService::Get(
    grpc::CallbackServerContext* context, const v1::GetDatasetRequest* request,
    v1::Dataset* response) {
  return RunUnary(deps_, context, "DatasetService.Get",
                  [&](const std::string& tenant) -> absl::Status {
                    SPARROW_ASSIGN_OR_RETURN(
                        *response,
                        deps_.store->GetDataset(tenant, request->id()));
                    return absl::OkStatus();
                  });
}

grpc::ServerUnaryReactor* DatasetService::List(
    grpc::CallbackServerContext* context,
    const v1::ListDatasetsRequest* request,
    v1::ListDatasetsResponse* response) {
  return RunUnary(
      deps_, context, "DatasetService.List",
      [&](const std::string& tenant) -> absl::Status {
        SPARROW_ASSIGN_OR_RETURN(int size, PageSize(request->page_size()));
        SPARROW_ASSIGN_OR_RETURN(
            Page<v1::Dataset> page,
            deps_.store->ListDatasets(tenant, size, request->page_token()));
        for (v1::Dataset& d : page.items)
          *response->add_datasets() = std::move(d);
        response->set_next_page_token(page.next_page_token);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* DatasetService::Delete(
    grpc::CallbackServerContext* context,
    const v1::DeleteDatasetRequest* request, v1::DeleteDatasetResponse*) {
  return RunUnary(deps_, context, "DatasetService.Delete",
                  [&](const std::string& tenant) -> absl::Status {
                    SPARROW_RETURN_IF_ERROR(
                        deps_.store->DeleteDataset(tenant, request->id()));
                    spdlog::info("dataset {} tenant {}: deleted", request->id(),
                                 tenant);
                    return absl::OkStatus();
                  });
}

}  // namespace sparrow::server
