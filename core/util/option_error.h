// The one wording of "this option has a bad value" used by every
// Options::Validate and by the spec conversion: "<field> is <value>; it must be
// <rule>".
#ifndef SPARROW_CORE_UTIL_OPTION_ERROR_H_
#define SPARROW_CORE_UTIL_OPTION_ERROR_H_

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sparrow::core {

inline absl::Status OptionError(absl::string_view field, double value,
                                absl::string_view rule) {
  // Whole numbers as integers: an int field of 10000001 is not "1e+07".
  const bool whole = std::abs(value) < 1e15 && value == std::floor(value);
  return absl::InvalidArgumentError(absl::StrCat(
      field, " is ",
      whole ? absl::StrCat(static_cast<int64_t>(value)) : absl::StrCat(value),
      "; it must be ", rule));
}

}  // namespace sparrow::core

#endif  // SPARROW_CORE_UTIL_OPTION_ERROR_H_
