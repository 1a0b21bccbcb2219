# -*- test-case-name: tests.test_render_terminal -*-
"""Tests for L{gophergem.render.terminal}: the readable rendering of a payload."""

from __future__ import annotations

import pytest

from gophergem.render.terminal import readable as render


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"kind": "input", "prompt": "Name?", "sensitive": False}, "input wanted: Name?"),
        ({"kind": "error", "error": {"code": "TIMEOUT", "message": "slow"}}, "error TIMEOUT: slow"),
        (
            {"kind": "redirect", "new_url": "gemini://x/", "permanent": True},
            "redirect (permanent): gemini://x/",
        ),
    ],
)
def test_render(data: dict, expected: str) -> None:
    """The terminal rendering names each kind plainly."""
    assert render(data).startswith(expected)


def test_render_error_keeps_every_field() -> None:
    """An error shows its status, the capsule's meta (as theirs) and when to retry."""
    shown = render(
        {
            "kind": "error",
            "request_info": {"url": "gemini://x/"},
            "error": {
                "code": "SLOW_DOWN",
                "message": "Slow down.",
                "status": 44,
                "meta": "patience, friend",
                "retry_after_seconds": 60.0,
                "next_step": "Wait.",
            },
        }
    )
    assert "SLOW_DOWN" in shown and "44" in shown
    assert "the server said: patience, friend" in shown
    assert "try again in 60 s" in shown and "next: Wait." in shown


def test_render_notes() -> None:
    """The size-cap and incomplete notes and TLS warnings are shown, not dropped."""
    shown = render(
        {
            "kind": "text",
            "request_info": {"url": "gopher://x/0/a"},
            "text": "body",
            "size_capped": True,
            "incomplete": True,
            "incomplete_reason": "connection_reset",
            "note": "The server sent more than the configured size cap. The connection broke.",
            "next_offset": 4,
        }
    )
    assert "body" in shown and "size cap" in shown and "connection broke" in shown
    assert "incomplete (connection_reset)" in shown and "--offset 4" in shown
    gemini = render(
        {
            "kind": "success",
            "request_info": {"url": "gemini://x/", "tofu_warning": "first visit"},
            "content": "hi",
        }
    )
    assert "warning: first visit" in gemini


def test_render_input_links() -> None:
    """A Spartan =: link is printed with its own marker."""
    data = {
        "kind": "gemtext",
        "document": {
            "lines": [
                {
                    "type": "link",
                    "content": "=: /s Search",
                    "link": {"url": "spartan://h/s", "text": "Search", "takes_input": True},
                },
                {
                    "type": "link",
                    "content": "=> /a A",
                    "link": {"url": "spartan://h/a", "text": "A"},
                },
            ]
        },
    }
    assert render(data).splitlines()[:2] == ["=: Search  <spartan://h/s>", "=> A  <spartan://h/a>"]
