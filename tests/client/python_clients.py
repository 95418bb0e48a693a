"""pricer_client.aio.Client driven from blocking test code, so that a test
of the blocking client runs unchanged on the asyncio one: each method call
runs its coroutine to the end on the client's own event loop."""

import asyncio

from pricer_client import aio


class BlockingAioClient:
    def __init__(self, *args, **kwargs):
        self._loop = asyncio.new_event_loop()

        async def make():  # grpc.aio channels belong to the loop they are made on
            return aio.Client(*args, **kwargs)

        try:
            self._client = self._loop.run_until_complete(make())
        except BaseException:
            self._loop.close()
            raise

    def __getattr__(self, name):
        method = getattr(self._client, name)
        if not asyncio.iscoroutinefunction(method):
            return method
        return lambda *args, **kwargs: self._loop.run_until_complete(method(*args, **kwargs))

    def close(self):
        self._loop.run_until_complete(self._client.close())
        self._loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
