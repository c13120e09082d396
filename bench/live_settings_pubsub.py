"""Experiment (bench/live.py --settings live_settings_pubsub): the project's settings with
channels_redis's pub/sub layer instead of RedisChannelLayer.

RedisChannelLayer costs four Redis round trips per group_send (ZREMRANGEBYSCORE, ZRANGE, a
MULTI/EXEC pipeline, EVAL with the whole Lua script) and four per message received (EVAL,
BZPOPMIN, ZADD to a backup queue, ZPOPMIN), the receiving ones one message at a time per
process. RedisPubSubChannelLayer publishes once per group_send and has messages pushed to a
subscribed connection. Both are at-most-once; the live relay already assumes that (the
stream buffer and offsets cover a lost frame).
"""

from config.settings import *  # noqa: F403
from config.settings import REDIS_URL

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None}], "prefix": "rostrum"},
        }
    }
