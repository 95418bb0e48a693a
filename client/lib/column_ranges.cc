#include "client/lib/column_ranges.h"

#include <algorithm>
#include <iterator>

namespace pricer {

void ColumnRanges::Add(int64_t begin, int64_t end) {
  if (begin >= end) return;
  // Absorb every range that overlaps or touches [begin, end).
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin() && std::prev(it)->second >= begin) --it;
  while (it != ranges_.end() && it->first <= end) {
    begin = std::min(begin, it->first);
    end = std::max(end, it->second);
    count_ -= it->second - it->first;
    it = ranges_.erase(it);
  }
  ranges_.emplace(begin, end);
  count_ += end - begin;
}

bool ColumnRanges::Overlaps(int64_t begin, int64_t end) const {
  if (begin >= end) return false;
  auto it = ranges_.lower_bound(end);  // the first range starting at or after end
  return it != ranges_.begin() && std::prev(it)->second > begin;
}

std::vector<ColumnRange> ColumnRanges::Missing(int64_t begin, int64_t end) const {
  std::vector<ColumnRange> missing;
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin() && std::prev(it)->second > begin) --it;
  int64_t at = begin;
  for (; it != ranges_.end() && it->first < end; ++it) {
    if (it->first > at) missing.emplace_back(at, it->first);
    at = std::max(at, it->second);
  }
  if (at < end) missing.emplace_back(at, end);
  return missing;
}

}  // namespace pricer
