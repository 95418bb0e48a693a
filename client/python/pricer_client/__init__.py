"""Python client of the pricer service.

    from pricer_client import Client
    client = Client("localhost:50051")
    stats = client.price(issuers=500, paths=10_000, scenarios=20_000, seed=42,
                         rate=0.02, maturity=1.0, statistics=["mean", "var:0.99"])
    stats["var_0.99"]        # NumPy array, one value per scenario column

    # A server with TLS (mutual here) and bearer tokens: PEM paths or bytes.
    client = Client("pricer.example:50051", token=open("token").read().strip(),
                    tls_ca="ca.pem", tls_cert="client.pem", tls_key="client.key")

The generated protobuf modules (pricer/v1/pricer_pb2*.py and
pricer/v1/client_protocol_pb2.py, the retry policy and other values this
client shares with the C++ one) come from proto/pricer/v1/ at build time; see
client/python/README.md.
"""

from pricer_client.client import Client, PriceResult, PricerError

__all__ = ["Client", "PriceResult", "PricerError"]
