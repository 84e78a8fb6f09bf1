// "Did you mean ...?" for names a user typed: subcommands, flags, spec fields
// and enum values. Shared by the CLI and the spec checks.
#ifndef SPARROW_TRANSLATE_SUGGEST_H_
#define SPARROW_TRANSLATE_SUGGEST_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace sparrow::translate {

// The optimal-string-alignment distance between a and b, ignoring ASCII case:
// insertions, deletions, substitutions and swaps of two adjacent characters
// each count 1 ("stoping" -> "stopping" 1, "trian" -> "train" 1).
int EditDistance(absl::string_view a, absl::string_view b);

// The candidate closest to `word` when it is close enough to be a typo (at
// most max(1, size / 3) edits away; the first of equally close ones), else "".
std::string ClosestName(absl::string_view word,
                        const std::vector<std::string>& candidates);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_SUGGEST_H_
