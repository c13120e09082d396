"""Websocket routes."""

from django.urls import path

from debates.live.consumer import LiveSessionConsumer
from debates.persuasion.consumer import PersuasionConsumer

websocket_urlpatterns = [
    path("ws/live/<str:token>/", LiveSessionConsumer.as_asgi()),
    path("ws/persuasion/<str:token>/", PersuasionConsumer.as_asgi()),
]
