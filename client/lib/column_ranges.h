// Which columns (or issuers) of a result have arrived, as disjoint ranges:
// what a broken call, or an interrupted run, still has to ask for.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace pricer {

// A half-open range [first, second) of column indices.
using ColumnRange = std::pair<int64_t, int64_t>;

// A set of column indices kept as merged ranges, e.g.
//   ColumnRanges r;  r.Add(0, 10);  r.Add(20, 30);
//   r.Missing(0, 40) == {{10, 20}, {30, 40}}
class ColumnRanges {
 public:
  // Adds [begin, end); an empty range adds nothing.
  void Add(int64_t begin, int64_t end);
  // Whether any column of [begin, end) is already in the set.
  bool Overlaps(int64_t begin, int64_t end) const;
  // The ranges of [begin, end) not in the set, in order.
  std::vector<ColumnRange> Missing(int64_t begin, int64_t end) const;
  bool Covers(int64_t begin, int64_t end) const { return Missing(begin, end).empty(); }
  // How many columns the set holds.
  int64_t count() const { return count_; }
  bool empty() const { return ranges_.empty(); }

 private:
  std::map<int64_t, int64_t> ranges_;  // begin -> end; disjoint, never adjacent
  int64_t count_ = 0;
};

}  // namespace pricer
