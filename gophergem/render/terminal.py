# -*- test-case-name: tests.test_render_terminal -*-
"""
The readable rendering of a payload, for a person at a terminal: what
C{gophergem fetch} prints unless it is asked for JSON.

It reads the payload dicts of L{gophergem.render.payloads}, the same ones
the MCP tools return, so the terminal and a model see one set of facts.
"""

from __future__ import annotations

from typing import Any

from gophergem._plural import counted

__all__ = ["readable"]


def readable(data: dict[str, Any]) -> str:
    """
    A readable rendering of a payload for a person at a terminal.

    Nothing the payload says about the result is dropped: the size-cap and
    incomplete notes, a TOFU or client-certificate warning, and an error's
    status, the capsule's own text (C{meta}, marked as theirs) and when to
    try again all have a line.
    """
    kind = data["kind"]
    lines: list[str] = []
    if kind == "menu":
        for item in data["items"]:
            if item["type"] == "i" or not item["next_url"]:
                lines.append(f"      {item['title']}")
            else:
                lines.append(f"[{item['type']}]   {item['title']}  <{item['next_url']}>")
    elif kind == "text":
        lines.append(data["text"])
    elif kind == "binary":
        size: int = data["bytes"] if "bytes" in data else data["size"]
        lines.append(f"binary: {counted(size, 'byte')}, {data['mime_type']}")
    elif kind == "gemtext":
        if "text" in data:
            lines.append(data["text"])
        for line in (data.get("document") or {}).get("lines", []):
            if line["type"] == "link":
                label = line["link"].get("text") or line["link"]["url"]
                marker = "=:" if line["link"].get("takes_input") else "=>"
                lines.append(f"{marker} {label}  <{line['link']['url']}>")
            else:
                lines.append(line["content"])
    elif kind == "success":
        lines.append(data["content"])
    elif kind == "input":
        lines.append(f"input wanted: {data['prompt']}  (answer with --input)")
    elif kind == "redirect":
        lines.append(
            f"redirect ({'permanent' if data['permanent'] else 'temporary'}): {data['new_url']}"
        )
    elif kind == "certificate":
        lines.append(f"certificate {data['status']}: {data['message']}")
        lines.append(f"next: {data['next_step']}")
    else:
        lines.extend(_render_error(data["error"]))
    info = data.get("request_info") or {}
    for name in ("tofu_warning", "client_cert_warning"):
        if info.get(name):
            lines.append(f"-- warning: {info[name]}")
    if data.get("incomplete"):
        lines.append(f"-- incomplete ({data.get('incomplete_reason') or 'reason unknown'})")
    if data.get("note"):
        lines.append(f"-- note: {data['note']}")
    if data.get("next_offset") is not None:
        lines.append(f"-- more: --offset {data['next_offset']}")
    return "\n".join(lines)


def _render_error(error: dict[str, Any]) -> list[str]:
    status = f" (status {error['status']})" if error.get("status") is not None else ""
    lines = [f"error {error['code']}{status}: {error['message']}"]
    if error.get("meta"):
        lines.append(f"the server said: {error['meta']}")
    for name, label in (
        ("pinned_fingerprint", "pinned"),
        ("presented_fingerprint", "presented"),
        ("pinned_expires", "pinned certificate expires"),
    ):
        if error.get(name):
            lines.append(f"{label}: {error[name]}")
    if error.get("retry_after_seconds") is not None:
        seconds = error["retry_after_seconds"]
        lines.append(f"try again in {seconds:g} s")
    if error.get("next_step"):
        lines.append(f"next: {error['next_step']}")
    return lines
