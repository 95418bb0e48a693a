"""The asyncio client: pricer_client.Client's API on grpc.aio, for services
that run an event loop. The same arguments, checks, results, retries of
missing column ranges, token and TLS; each method is a coroutine.

    import asyncio
    from pricer_client import aio

    async def main():
        async with aio.Client("localhost:50051") as client:
            results = await asyncio.gather(*(
                client.price(issuers=50, paths=10_000, seed=seed, scenarios=2_000,
                             statistics=["var:0.99", "es:0.975"])
                for seed in range(8)))

    asyncio.run(main())
"""

import asyncio
import functools
import inspect
from typing import Optional, Sequence, Tuple, Union

import grpc
import grpc.aio
import numpy as np

from pricer_client import client as _blocking
from pricer_client._calls import WarmUp, prepare_price, scenario_set_id, upload_chunks
from pricer_client._channel import Pem, bearer_metadata, open_aio_channel
from pricer_client._errors import PricerError, from_rpc_error
from pricer_client._parts import make_parts
from pricer_client._proto import pricer_pb2, pricer_pb2_grpc
from pricer_client._protocol import CHANNEL
from pricer_client._results import PriceResult
from pricer_client._targets import Target

__all__ = ["Client", "PriceResult", "PricerError", "Target"]

# The arguments of price(), their defaults included: the blocking client's.
_PRICE = inspect.signature(_blocking.Client.price)


class Client:
    """A grpc.aio connection to one server, or to several behind one target;
    the arguments of pricer_client.Client. Open and use it on one event
    loop."""

    def __init__(self, target: str = CHANNEL.default_target, token: Optional[str] = None,
                 tls_ca: Optional[Pem] = None, tls_cert: Optional[Pem] = None,
                 tls_key: Optional[Pem] = None, tls_server_name: Optional[str] = None,
                 options: Sequence[Tuple[str, Union[int, str]]] = ()):
        self._channel = open_aio_channel(target, tls_ca, tls_cert, tls_key, tls_server_name,
                                         options)
        self._metadata = bearer_metadata(token)
        self._stub = pricer_pb2_grpc.PricerStub(self._channel)

    async def close(self):
        await self._channel.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _call(self, method, request):
        try:
            return await method(request, metadata=self._metadata)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    async def devices(self) -> pricer_pb2.ListDevicesReply:
        """The server's devices and their memory accounting."""
        return await self._call(self._stub.ListDevices, pricer_pb2.ListDevicesRequest())

    async def upload(self, matrix: np.ndarray, chunk_bytes: int = 1 << 20) -> str:
        """Stores an N x M matrix and returns its id (Client.upload)."""
        return (await self._call(self._stub.UploadScenarios,
                                 upload_chunks(matrix, chunk_bytes))).id

    @staticmethod
    def scenario_set_id(matrix: np.ndarray) -> str:
        """The id the server gives `matrix`, computed locally."""
        return scenario_set_id(matrix)

    async def _connect_to_every_server(self, parts):
        """Before the parts of a split start: see WarmUp."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(),
                                   WarmUp.CONNECT_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            raise PricerError(grpc.StatusCode.UNAVAILABLE,
                              "no server answered within the split's connect timeout") from None
        warm_up = WarmUp(parts)
        while (wait := warm_up.after((await self.devices()).server_id)) is not None:
            await asyncio.sleep(wait)

    async def price(self, **arguments) -> PriceResult:
        bound = _PRICE.bind(self, **arguments)  # TypeError naming a wrong argument
        bound.apply_defaults()
        call = prepare_price(**{k: v for k, v in bound.arguments.items() if k != "self"})
        if call.parts > 1:
            await self._connect_to_every_server(call.parts)
        price = functools.partial(self._stub.Price, metadata=self._metadata)
        parts = [asyncio.ensure_future(_run(price, part))
                 for part in make_parts(call.request, call.span, call.parts, call.results,
                                        call.deadline, call.shared_memory)]
        try:
            await asyncio.gather(*parts)
        finally:
            for part in parts:  # the first failure ends the others' calls
                part.cancel()
        return call.results.result()

    price.__signature__ = _PRICE
    price.__doc__ = _blocking.Client.price.__doc__


async def _run(price, part):
    """One part's calls and retries: _parts._run on asyncio."""
    with part:
        while True:
            before = part.progress()
            try:
                for asked, with_prices in part.calls():
                    call = price(part.request(asked, with_prices), timeout=part.timeout())
                    try:
                        async for reply in call:
                            part.take(reply, asked)
                    except grpc.RpcError:
                        raise
                    except BaseException:
                        call.cancel()  # our own error, or the task cancelled: stop the job
                        raise
                    part.check_complete(asked, with_prices)
                return
            except grpc.RpcError as error:
                backoff = part.retry_after(error, before)
            await asyncio.sleep(backoff)
