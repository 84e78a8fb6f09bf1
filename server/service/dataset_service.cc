#include "server/service/dataset_service.h"

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/csv.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "spdlog/spdlog.h"

namespace sparrow::server {

namespace {

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF). Hand-written: protobuf 3.21 and Abseil 20220623
// export no validator, and this one is small.
bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated sequence
    for (int k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
    }
    i += n + 1;
  }
  return true;
}

// Reads the chunks of one upload; nothing is stored unless the offsets are
// contiguous, the size is within the limit, the checksum matches and the CSV
// parses as a numeric table.
class UploadReactor : public grpc::ServerReadReactor<v1::UploadDatasetRequest> {
 public:
  UploadReactor(const ServiceDeps& deps, grpc::CallbackServerContext* context,
                v1::UploadDatasetResponse* response)
      : deps_(deps), response_(response) {
    auto tenant = Admit(deps_, context);
    if (!tenant.ok()) {
      Done(tenant.status());
      return;
    }
    tenant_ = *tenant;
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
    const int64_t have = static_cast<int64_t>(content_.size());
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
    content_.append(chunk_.data());
    return absl::OkStatus();
  }

  absl::Status Complete() {
    const std::string sha = Sha256Hex(content_);
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
    auto table = core::data::ParseCsv(content_);
    if (!table.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the upload is not a numeric CSV Sparrow can train on: ",
          table.status().message(),
          " (every column must hold finite numbers; drop or encode other "
          "columns before uploading); nothing was stored"));
    }
    // Column names go into string fields of the replies: protobuf cannot
    // send invalid UTF-8, so such a dataset would poison every listing.
    for (size_t i = 0; i < table->header.size(); ++i) {
      if (!IsUtf8(table->header[i])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the name of column ", i + 1, " ('",
            absl::CHexEscape(table->header[i]),
            "') is not valid UTF-8; save the CSV as UTF-8; nothing was "
            "stored"));
      }
    }
    v1::Dataset meta;
    meta.set_id(sha);
    meta.set_name(name_);
    meta.set_size_bytes(static_cast<int64_t>(content_.size()));
    meta.set_rows(table->num_rows());
    for (const std::string& c : table->header) meta.add_columns(c);
    *meta.mutable_create_time() =
        google::protobuf::util::TimeUtil::GetCurrentTime();
    bool existed = false;
    SPARROW_ASSIGN_OR_RETURN(
        *response_->mutable_dataset(),
        deps_.store->PutDataset(tenant_, meta, content_, &existed));
    response_->set_already_existed(existed);
    if (!existed) {
      spdlog::info("dataset {} tenant {}: stored ({} bytes, {} rows)", sha,
                   tenant_, content_.size(), table->num_rows());
    }
    return absl::OkStatus();
  }

  void Done(const absl::Status& status) {
    content_.clear();
    const grpc::Status s = ToGrpcStatus(status);
    deps_.metrics->CountRpc("DatasetService.Upload", s.error_code());
    Finish(s);
  }

  const ServiceDeps& deps_;
  v1::UploadDatasetResponse* response_;
  std::string tenant_;
  std::string name_;
  std::string content_;
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
