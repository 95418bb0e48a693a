"""Python client of the pricer service (pip install pricer-client).

    from pricer_client import Client
    with Client("localhost:50051") as client:
        result = client.price(issuers=500, paths=10_000, scenarios=20_000, seed=42,
                              rate=0.02, maturity=1.0, statistics=["mean", "var:0.99"])
    result.statistics["var_0.99"]   # NumPy array, one value per scenario column
    result.to_pandas()              # with pandas: one row per column

    # A server with TLS (mutual here) and bearer tokens: PEM paths or bytes.
    client = Client("pricer.example:50051", token=open("token").read().strip(),
                    tls_ca="ca.pem", tls_cert="client.pem", tls_key="client.key")

pricer_client.aio has the same API on asyncio. The generated protobuf and
gRPC modules are pricer_client._proto (scripts/python-protos.sh).
"""

from pricer_client._errors import PricerError
from pricer_client._protocol import seed_preset
from pricer_client._results import PriceResult
from pricer_client._targets import Target
from pricer_client.client import Client

# project(VERSION) of the repository's CMakeLists.txt (tests check it).
__version__ = "0.1.0"

__all__ = ["Client", "PriceResult", "PricerError", "Target", "seed_preset", "__version__"]
