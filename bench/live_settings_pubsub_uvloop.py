"""Experiment (bench/live.py --settings live_settings_pubsub_uvloop): the pub/sub channel
layer (see live_settings_pubsub.py), and uvloop as the event loop policy, so the loop a
Celery worker process writes its turns on (debates.runner.process_loop(), which calls
asyncio.new_event_loop()) is a uvloop loop, as uvicorn's already is."""

import asyncio

import uvloop
from live_settings_pubsub import *  # noqa: F403

asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
