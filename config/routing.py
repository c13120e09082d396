"""Websocket routes. Live debates (study design B) add theirs here."""

websocket_urlpatterns: list = []
