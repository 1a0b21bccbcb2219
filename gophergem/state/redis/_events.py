# -*- test-case-name: tests.test_state_redis -*-
"""
Announcements every replica hears: L{RedisEvents}, over Redis pub/sub.

When one replica learns that a resource changed (a subscription made
through it, or the periodic feed check it ran), the clients listening on
the other replicas must be told too.  Each replica publishes the change on
one channel and listens to it, and tells its own listeners what it hears,
its own announcements included.  Pub/sub delivers at most once: a replica
that is not connected at that moment misses the announcement, as a client
whose stream dropped does (clients listen again and read afresh).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.defer import Deferred, succeed
from twisted.logger import Logger

from gophergem.state.redis._client import RedisClient

__all__ = ["RETRY_SECONDS", "RedisEvents"]

log = Logger(namespace="gophergem.state.redis")

RETRY_SECONDS = 1.0
"""How long the listener waits before it subscribes again after losing Redis."""

_MAX_MESSAGE = 64 * 1024


@attrs.define
class RedisEvents:
    """
    One pub/sub channel: L{publish} a message (a JSON object), L{listen} to
    every message published by any replica.

    @ivar client: The replica's Redis client.
    @ivar channel: The channel name (under the client's prefix).
    """

    client: RedisClient
    channel: str
    _task: asyncio.Task[None] | None = attrs.field(default=None, init=False)

    def publish(self, message: dict[str, Any]) -> Deferred[int]:
        """Send C{message} to every listening replica; fire with how many heard it."""
        data = json.dumps(message, separators=(",", ":")).encode("utf-8")
        name = self.client.key(self.channel)
        return self.client.call(lambda redis: redis.publish(name, data))

    def listen(self, deliver: Callable[[dict[str, Any]], None]) -> None:
        """
        Call C{deliver} with each message from now on (a JSON object, as
        published), until L{stop}; reconnect after losing Redis.
        """
        if self._task is None:
            self._task = self.client.loop.create_task(self._listen(deliver))

    async def _listen(self, deliver: Callable[[dict[str, Any]], None]) -> None:
        name = self.client.key(self.channel)
        lost = False
        while True:
            pubsub = self.client.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(name)
                if lost:
                    log.info("listening to the other replicas again")
                    lost = False
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None:
                        self._deliver(message.get("data"), deliver)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if not lost:
                    log.warn(
                        "lost the other replicas' announcements ({kind}); retrying",
                        kind=type(error).__name__,
                    )
                    lost = True
                await asyncio.sleep(RETRY_SECONDS)
            finally:
                with contextlib.suppress(Exception):  # the connection is gone anyway
                    await pubsub.aclose()

    @staticmethod
    def _deliver(data: object, deliver: Callable[[dict[str, Any]], None]) -> None:
        if not isinstance(data, bytes) or len(data) > _MAX_MESSAGE:
            return
        try:
            message = json.loads(data)
        except ValueError:
            return
        if isinstance(message, dict):
            try:
                deliver(message)
            except Exception:
                log.failure("an announcement could not be delivered")

    def stop(self) -> Deferred[None]:
        """Stop listening."""
        task, self._task = self._task, None
        if task is None or task.done():
            return succeed(None)

        async def cancelled() -> None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        return Deferred.fromFuture(self.client.loop.create_task(cancelled()))
