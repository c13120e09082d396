"""Websocket routes."""

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import path, re_path

from debates.live.consumer import LiveSessionConsumer
from debates.persuasion.consumer import PersuasionConsumer


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any other path: the handshake is refused (HTTP 403), rather than the router raising
    "No route found" (a 500 with a traceback in the log for every such request)."""

    async def connect(self) -> None:
        await self.close()


websocket_urlpatterns = [
    path("ws/live/<str:token>/", LiveSessionConsumer.as_asgi()),
    path("ws/persuasion/<str:token>/", PersuasionConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),
]
