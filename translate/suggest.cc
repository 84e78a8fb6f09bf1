#include "translate/suggest.h"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"

namespace sparrow::translate {

int EditDistance(absl::string_view a, absl::string_view b) {
  const size_t m = b.size();
  // Rows i - 2, i - 1 and i of the table d[i][j]: the distance between the
  // first i characters of a and the first j of b.
  std::vector<int> before(m + 1), prev(m + 1), row(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = static_cast<int>(j);
  auto lower = [](char c) { return absl::ascii_tolower(c); };
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= m; ++j) {
      const int cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        row[j] = std::min(row[j], before[j - 2] + 1);
      }
    }
    std::swap(before, prev);
    std::swap(prev, row);
  }
  return prev[m];
}

std::string ClosestName(absl::string_view word,
                        const std::vector<std::string>& candidates) {
  // Names are short; a long word is no typo of one (and would cost
  // size * candidate size per candidate).
  constexpr size_t kLongest = 64;
  if (word.size() > kLongest) return "";
  const int limit = std::max<int>(1, static_cast<int>(word.size()) / 3);
  std::string best;
  int best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const int gap = static_cast<int>(c.size()) - static_cast<int>(word.size());
    if (std::abs(gap) > limit) continue;  // at least |gap| edits apart
    const int distance = EditDistance(word, c);
    if (distance < best_distance) {
      best = c;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace sparrow::translate
