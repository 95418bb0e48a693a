"""What the Python client shares with the C++ one, read once from the field
defaults of proto/pricer/v1/client_protocol.proto: the retry policy, the
split warm-up, the channel settings, the original example's draws and the
layout of a shared-memory ring."""

import grpc

from pricer_client._proto import client_protocol_pb2

RETRY = client_protocol_pb2.RetryPolicy()
SPLIT_WARM_UP = client_protocol_pb2.SplitWarmUp()
CHANNEL = client_protocol_pb2.ChannelSettings()
SEED_PRESET = client_protocol_pb2.SeedPreset()
SHARED_RING = client_protocol_pb2.SharedRingLayout()

# A call that breaks (a server killed, draining or cut off) is asked again for
# the columns that have not arrived, up to MAX_RETRIES times in a row without
# progress, after 0.2 s, 0.4 s, 0.8 s; round robin sends it to a server that
# is still up. Only the RETRYABLE_CODES (UNAVAILABLE, ABORTED) are retried: a
# refused request (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED, ...) or a
# failed one (INTERNAL, UNKNOWN, ...) would end the same way again.
MAX_RETRIES = RETRY.max_retries_without_progress
FIRST_BACKOFF_SECONDS = RETRY.first_backoff_ms / 1000
BACKOFF_MULTIPLIER = RETRY.backoff_multiplier
RETRYABLE_CODES = frozenset(grpc.StatusCode[name] for name in RETRY.retryable_codes.split(","))


def seed_preset():
    """price()'s arguments for the original example (`pricer price --preset
    seed`): 500 issuers, 10,000 paths, 1,000,000 scenario columns, seed 42,
    rate 0.02, maturity 1 year; override any of them, e.g.
    client.price(**seed_preset() | {"scenarios": 20_000})."""
    return dict(issuers=SEED_PRESET.issuers, paths=SEED_PRESET.paths, seed=SEED_PRESET.seed,
                rate=SEED_PRESET.rate, maturity=SEED_PRESET.maturity,
                scenarios=SEED_PRESET.scenarios)
