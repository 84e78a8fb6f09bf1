// Helpers over the API's job states that the server and the client share.
// Header-only, next to the proto, so that the client does not link the
// server to use them.
#ifndef SPARROW_PROTO_SPARROW_V1_JOB_STATE_H_
#define SPARROW_PROTO_SPARROW_V1_JOB_STATE_H_

#include "sparrow/v1/jobs.pb.h"

namespace sparrow::v1 {

// Whether a job in state s has ended for good: it succeeded, failed or was
// cancelled. Nothing moves a job out of a final state.
inline bool IsFinal(Job::State s) {
  return s == Job::SUCCEEDED || s == Job::FAILED || s == Job::CANCELLED;
}

// Whether e is the event that says its job has ended (the last of a job's
// events).
inline bool IsFinalEvent(const ProgressEvent& e) {
  return e.kind() == ProgressEvent::STATE && IsFinal(e.state());
}

}  // namespace sparrow::v1

#endif  // SPARROW_PROTO_SPARROW_V1_JOB_STATE_H_
