# -*- test-case-name: tests.test_state_redis -*-
"""
Politeness shared by replicas through Redis: pacing, the concurrency cap,
the 44 board, and the robots.txt and response caches.

L{RedisPolicy} implements L{gophergem.interfaces.IPolicyBackend} on
redis-py's asyncio client (the C{team} extra), on the asyncio reactor.
Importing this package does not import redis-py: the driver is imported
when L{RedisPolicy.connect} runs.
"""

from gophergem.state.redis._codec import WIRE_TYPES, Cacheable, ValueCodec
from gophergem.state.redis._policy import (
    NearCache,
    RedisConcurrencyCap,
    RedisHostPacer,
    RedisPolicy,
    RedisResponseCache,
    RedisSlowDownBoard,
)

__all__ = [
    "WIRE_TYPES",
    "Cacheable",
    "NearCache",
    "RedisConcurrencyCap",
    "RedisHostPacer",
    "RedisPolicy",
    "RedisResponseCache",
    "RedisSlowDownBoard",
    "ValueCodec",
]
