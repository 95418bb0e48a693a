"""Sets of column (or issuer) indices."""


class Ranges:
    """A set of column (or issuer) indices kept as merged half-open ranges."""

    def __init__(self):
        self._ranges = []  # sorted, disjoint, never adjacent
        self.count = 0

    def add(self, begin, end):
        if begin >= end:
            return
        kept = []
        for first, last in self._ranges:
            if last < begin or first > end:
                kept.append((first, last))
            else:  # overlaps or touches: absorb it
                begin, end = min(begin, first), max(end, last)
                self.count -= last - first
        kept.append((begin, end))
        self._ranges = sorted(kept)
        self.count += end - begin

    def copy(self):
        other = Ranges()
        other._ranges, other.count = list(self._ranges), self.count
        return other

    def missing(self, begin, end):
        """The ranges of [begin, end) not in the set, in order."""
        gaps, at = [], begin
        for first, last in self._ranges:
            if last <= at or first >= end:
                continue
            if first > at:
                gaps.append((at, first))
            at = max(at, last)
        if at < end:
            gaps.append((at, end))
        return gaps

    def overlaps(self, begin, end):
        return any(first < end and begin < last for first, last in self._ranges)
