// "Did you mean": the known name closest to a misspelt one, for messages about
// flags, dimension names, targets and other names a user types.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

// Levenshtein distance with adjacent transpositions counted as one edit
// ("btach" is one edit from "batch"), case-sensitive.
inline size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

// The name in `known` closest to `word`, if it is close enough to be what was
// meant: at most a third of the word's length in edits (at least one edit).
inline std::optional<std::string> ClosestName(std::string_view word, const std::vector<std::string>& known) {
  const size_t allowed = std::max<size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& name : known) {
    const size_t distance = EditDistance(word, name);
    if (distance < best_distance) {
      best_distance = distance;
      best = name;
    }
  }
  return best;
}

// "; did you mean 'batch'?" or "".
inline std::string DidYouMean(std::string_view word, const std::vector<std::string>& known) {
  const std::optional<std::string> closest = ClosestName(word, known);
  return closest ? "; did you mean '" + *closest + "'?" : "";
}

// "a, b, c".
inline std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace strata
