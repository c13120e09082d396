"""Reading a streamed download in tests."""

from __future__ import annotations

from asgiref.sync import async_to_sync


def streamed_body(response) -> str:
    """The body of a streamed response, whether its iterator is sync or async."""
    if response.is_async:

        async def collect():
            return b"".join([chunk async for chunk in response.streaming_content])

        return async_to_sync(collect)().decode()
    return b"".join(response.streaming_content).decode()
