// A PriceRequest spoilt in one field, and what the refusal must say
// (price_validation_test.cc runs every case against a real server).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "pricer/v1/pricer.pb.h"

namespace pricer::testing {

struct BadRequestCase {
  std::string name;
  std::function<void(v1::PriceRequest&)> spoil;
  // What the message must say: the field path, " is ", the value as printed.
  std::string expected;
};

inline void PrintTo(const BadRequestCase& c, std::ostream* os) { *os << c.name; }

// The instruments' and historical returns' cases (book_validation_cases.cc),
// on SmallRequest: 4 explicit issuers, maturity 1.
std::vector<BadRequestCase> BookCases();
// The contributions' cases (attribution_validation_cases.cc), on the same.
std::vector<BadRequestCase> AttributionCases();

}  // namespace pricer::testing
