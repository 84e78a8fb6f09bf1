// Status propagation helpers. Abseil 20220623 ships no status macros, so we
// define the two we need once, here.
#ifndef SPARROW_CORE_UTIL_STATUS_MACROS_H_
#define SPARROW_CORE_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SPARROW_STATUS_CONCAT_INNER_(a, b) a##b
#define SPARROW_STATUS_CONCAT_(a, b) SPARROW_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define SPARROW_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    const ::absl::Status sparrow_status_ = (expr);     \
    if (!sparrow_status_.ok()) return sparrow_status_; \
  } while (false)

// `SPARROW_ASSIGN_OR_RETURN(auto x, Foo());` assigns the value of an
// absl::StatusOr or returns its error status.
#define SPARROW_ASSIGN_OR_RETURN(lhs, expr) \
  SPARROW_ASSIGN_OR_RETURN_IMPL_(           \
      SPARROW_STATUS_CONCAT_(sparrow_statusor_, __LINE__), lhs, expr)
#define SPARROW_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                   \
  if (!statusor.ok()) return statusor.status();             \
  lhs = std::move(statusor).value()

#endif  // SPARROW_CORE_UTIL_STATUS_MACROS_H_
