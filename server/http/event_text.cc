#include "server/http/event_text.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "google/protobuf/util/time_util.h"

namespace sparrow::server::http {
namespace {

using google::protobuf::util::TimeUtil;

// The SSE event name: "iteration", "state" or "trial_end".
const char* KindName(const v1::ProgressEvent& e) {
  switch (e.kind()) {
    case v1::ProgressEvent::STATE:
      return "state";
    case v1::ProgressEvent::TRIAL_END:
      return "trial_end";
    default:
      return "iteration";
  }
}

// The JSON and CSV kind: "ITERATION", "STATE" or "TRIAL_END".
const char* KindText(const v1::ProgressEvent& e) {
  return e.kind() == v1::ProgressEvent::STATE       ? "STATE"
         : e.kind() == v1::ProgressEvent::TRIAL_END ? "TRIAL_END"
                                                    : "ITERATION";
}

void AppendCsvNumber(double v, std::string* out) {
  if (std::isfinite(v)) AppendJsonNumber(v, out);
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
void AppendCsvText(absl::string_view s, std::string* out) {
  if (s.find_first_of(",\"\r\n") == absl::string_view::npos) {
    out->append(s.data(), s.size());
    return;
  }
  absl::StrAppend(out, "\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\"");
}

}  // namespace

void AppendJsonNumber(double v, std::string* out) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v);
  out->append(buffer, end);
}

void AppendJsonString(absl::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppend(out, "\\u00", absl::Hex(c, absl::kZeroPad2));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string FormatTime(int64_t unix_nanos) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E3SZ",
                          absl::FromUnixNanos(unix_nanos), absl::UTCTimeZone());
}

std::string EventJson(const v1::ProgressEvent& e) {
  std::string out = absl::StrCat(
      "{\"seq\":", e.seq(), ",\"kind\":\"", KindText(e), "\",\"time\":\"",
      FormatTime(TimeUtil::TimestampToNanoseconds(e.time())), "\"");
  if (e.kind() == v1::ProgressEvent::STATE) {
    absl::StrAppend(&out, ",\"state\":\"", v1::Job::State_Name(e.state()),
                    "\",\"reason\":");
    AppendJsonString(e.reason(), &out);
  } else if (e.kind() == v1::ProgressEvent::TRIAL_END) {
    absl::StrAppend(&out, ",\"trial\":", e.trial(), ",\"state\":\"",
                    v1::Job::State_Name(e.state()), "\",\"reason\":");
    AppendJsonString(e.reason(), &out);
    absl::StrAppend(&out, ",\"iteration\":", e.iteration(),
                    ",\"validation_metric\":");
    const double nan = std::nan("");
    AppendJsonNumber(e.has_validation_metric() ? e.validation_metric() : nan,
                     &out);
    out.append(",\"sparsity_pct\":");
    AppendJsonNumber(e.has_sparsity_pct() ? e.sparsity_pct() : nan, &out);
  } else {
    absl::StrAppend(&out, ",\"iteration\":", e.iteration(),
                    ",\"elapsed_seconds\":");
    AppendJsonNumber(e.elapsed_seconds(), &out);
    out.append(",\"loss\":");
    AppendJsonNumber(e.loss(), &out);
    const double nan = std::nan("");
    out.append(",\"validation_metric\":");
    AppendJsonNumber(e.has_validation_metric() ? e.validation_metric() : nan,
                     &out);
    out.append(",\"sparsity_pct\":");
    AppendJsonNumber(e.has_sparsity_pct() ? e.sparsity_pct() : nan, &out);
    out.append(",\"step_size\":");
    AppendJsonNumber(e.has_step_size() ? e.step_size() : nan, &out);
    if (e.has_trial()) absl::StrAppend(&out, ",\"trial\":", e.trial());
  }
  out.push_back('}');
  return out;
}

void AppendSseFrame(const v1::ProgressEvent& e, std::string* out) {
  absl::StrAppend(out, "id: ", e.seq(), "\nevent: ", KindName(e),
                  "\ndata: ", EventJson(e), "\n\n");
}

void AppendCsvRow(const v1::ProgressEvent& e, std::string* out) {
  absl::StrAppend(out, e.seq(), ",", KindText(e), ",",
                  FormatTime(TimeUtil::TimestampToNanoseconds(e.time())), ",");
  if (e.kind() == v1::ProgressEvent::TRIAL_END) {
    // The trial's iterations, validation figure and zeros in their columns;
    // the reason names the trial.
    absl::StrAppend(out, e.iteration(), ",,,");
    if (e.has_validation_metric()) AppendCsvNumber(e.validation_metric(), out);
    out->push_back(',');
    if (e.has_sparsity_pct()) AppendCsvNumber(e.sparsity_pct(), out);
    absl::StrAppend(out, ",,", v1::Job::State_Name(e.state()), ",");
    AppendCsvText(absl::StrCat("trial ", e.trial(), ": ", e.reason()), out);
    out->push_back('\n');
    return;
  }
  if (e.kind() != v1::ProgressEvent::STATE) {
    absl::StrAppend(out, e.iteration(), ",");
    AppendCsvNumber(e.elapsed_seconds(), out);
    out->push_back(',');
    AppendCsvNumber(e.loss(), out);
    out->push_back(',');
    if (e.has_validation_metric()) AppendCsvNumber(e.validation_metric(), out);
    out->push_back(',');
    if (e.has_sparsity_pct()) AppendCsvNumber(e.sparsity_pct(), out);
    out->push_back(',');
    if (e.has_step_size()) AppendCsvNumber(e.step_size(), out);
    out->append(",,\n");
    return;
  }
  out->append(",,,,,,");
  absl::StrAppend(out, v1::Job::State_Name(e.state()), ",");
  AppendCsvText(e.reason(), out);
  out->push_back('\n');
}

}  // namespace sparrow::server::http
