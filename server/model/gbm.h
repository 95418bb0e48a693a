// Geometric Brownian motion, shared by the cpu and cuda backends.
#pragma once

#include <cmath>

#include "server/model/counter_rng.h"

namespace pricer {

// Terminal price of geometric Brownian motion under the risk-neutral drift:
// S0 exp((r - sigma^2/2) T + sigma sqrt(T) z), evaluated as
// S0 exp(drift + diffusion * z) with the two per-issuer constants.
PRICER_HOST_DEVICE inline float TerminalPrice(float spot, float drift, float diffusion, float z) {
  return spot * expf(drift + diffusion * z);
}

}  // namespace pricer
