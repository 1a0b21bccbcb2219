# -*- test-case-name: tests.test_hostile_smolweb,tests.test_testing_hostile -*-
"""
The catalogue of hostile Finger behaviours (L{FINGER_BEHAVIOURS}).
"""

from __future__ import annotations

from collections.abc import Mapping

from gophergem.testing.hostile._engine import (
    BIDI_AND_ANSI,
    BINARY,
    Behaviour,
    answer,
    close,
    flood,
    hold,
    trickle,
)

#: A well-formed answer: a short plan.
GOOD_PLAN = b"Login: alice\r\nPlan:\r\nWrite a well-behaved finger daemon.\r\n"


FINGER_BEHAVIOURS: Mapping[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour(
            "trickle",
            "finger",
            "Answers with a plan one byte per second and only closes when it is done.",
            trickle(GOOD_PLAN * 20),
        ),
        Behaviour("silent", "finger", "Reads the query, then never sends a byte or closes.", hold),
        Behaviour(
            "never-close",
            "finger",
            "Sends a complete plan and keeps the connection open.",
            answer(GOOD_PLAN, then="hold"),
        ),
        Behaviour(
            "hold-mid-answer",
            "finger",
            "Sends half a plan and keeps the connection open.",
            answer(b"Login: alice\r\nPlan:\r\nThe first half of a pl", then="hold"),
        ),
        Behaviour(
            "send-forever",
            "finger",
            "Streams a plan without end until the client cuts the connection.",
            flood(b"Plan: more and more and more.\r\n" * 512),
        ),
        Behaviour(
            "binary",
            "finger",
            "Answers with binary garbage where a text plan was promised.",
            answer(BINARY),
        ),
        Behaviour(
            "huge-line",
            "finger",
            "Answers with one line of a million bytes, no line break, then closes.",
            answer(lambda: b"A" * 1_000_000),
        ),
        Behaviour(
            "close-silently",
            "finger",
            "Reads the query and closes without sending a single byte.",
            close,
        ),
        Behaviour(
            "reset-mid-answer",
            "finger",
            "Sends half a plan and aborts the connection (a reset on a real socket).",
            answer(b"Login: alice\r\nPlan:\r\nHalf a pl", then="cut"),
        ),
        Behaviour(
            "ansi-bidi",
            "finger",
            "Puts ANSI escape sequences, bidi overrides and other invisible characters "
            "in the plan.",
            answer(b"Plan: " + BIDI_AND_ANSI + b"\r\n"),
        ),
    )
}
