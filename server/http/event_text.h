// Text forms of progress events for the HTTP port: JSON objects (SSE data and
// the API), Server-Sent Events frames and CSV rows. Numbers are written in the
// shortest form that reads back to the same double; NaN and infinities, which
// JSON cannot carry, become null (CSV: empty).
#ifndef SPARROW_SERVER_HTTP_EVENT_TEXT_H_
#define SPARROW_SERVER_HTTP_EVENT_TEXT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "sparrow/v1/jobs.pb.h"

namespace sparrow::server::http {

void AppendJsonNumber(double v, std::string* out);
void AppendJsonString(absl::string_view s, std::string* out);
std::string FormatTime(int64_t unix_nanos);  // RFC 3339, UTC

std::string EventJson(const v1::ProgressEvent& e);
// "id: SEQ\nevent: iteration|state\ndata: JSON\n\n"
void AppendSseFrame(const v1::ProgressEvent& e, std::string* out);

inline constexpr absl::string_view kEventsCsvHeader =
    "seq,kind,time,iteration,elapsed_seconds,loss,validation_metric,"
    "sparsity_pct,step_size,state,reason\n";
void AppendCsvRow(const v1::ProgressEvent& e, std::string* out);

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_EVENT_TEXT_H_
