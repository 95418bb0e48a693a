#include "client/lib/byte_pieces.h"

#include <algorithm>
#include <cstring>

namespace pricer {

int64_t PiecesSize(const BytePieces& pieces) {
  int64_t size = 0;
  for (std::string_view piece : pieces) size += static_cast<int64_t>(piece.size());
  return size;
}

BytePieces PiecesRange(const BytePieces& pieces, int64_t offset, int64_t length) {
  BytePieces range;
  for (std::string_view piece : pieces) {
    if (length == 0) break;
    const auto size = static_cast<int64_t>(piece.size());
    if (offset >= size) {
      offset -= size;
      continue;
    }
    const int64_t n = std::min(length, size - offset);
    range.push_back(piece.substr(static_cast<size_t>(offset), static_cast<size_t>(n)));
    length -= n;
    offset = 0;
  }
  return range;
}

void CopyPieces(const BytePieces& pieces, char* out) {
  for (std::string_view piece : pieces) {
    std::memcpy(out, piece.data(), piece.size());
    out += piece.size();
  }
}

}  // namespace pricer
