"""Websocket routes."""

from django.urls import path

from debates.live.consumer import LiveSessionConsumer

websocket_urlpatterns = [
    path("ws/live/<str:token>/", LiveSessionConsumer.as_asgi()),
]
