// How `sparrow list` shows a page of jobs (each sweep followed by its
// trials), and the JSON that `status` and `cancel` print of one job.
#ifndef SPARROW_CLIENT_CLI_JOB_LIST_H_
#define SPARROW_CLIENT_CLI_JOB_LIST_H_

#include <string>

#include "sparrow/v1/jobs.pb.h"

namespace sparrow::cli {

// The table under a header (JOB, STATE, ITER, LOSS, BEST_VAL, ZEROS, TEST,
// NAME, REASON), "no jobs" for an empty page, and the next page's command.
void PrintJobList(const v1::ListJobsResponse& page);
// {"jobs": [...], "next_page_token": ...}, the jobs in the server's order.
void PrintJobListJson(const v1::ListJobsResponse& page);
// The job as indented JSON, the API's fields in order, without the metrics
// that were not measured (proto3 JSON writes those as "NaN").
std::string JobJson(const v1::Job& job);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_JOB_LIST_H_
