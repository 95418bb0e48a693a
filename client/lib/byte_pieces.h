// Bytes held in several pieces (the slices of a received gRPC message),
// handled without joining them.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace pricer {

using BytePieces = std::vector<std::string_view>;

int64_t PiecesSize(const BytePieces& pieces);
// Bytes [offset, offset + length) of the pieces joined; they must hold them.
BytePieces PiecesRange(const BytePieces& pieces, int64_t offset, int64_t length);
// Copies the pieces, joined, to `out`.
void CopyPieces(const BytePieces& pieces, char* out);

}  // namespace pricer
