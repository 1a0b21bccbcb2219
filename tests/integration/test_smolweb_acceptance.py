"""
C{smolweb_fetch} as a user would check it: the MCP SDK's own client over
stdio (C{python -m gophergem}) against real servers nobody here wrote, on
127.0.0.1 (free ports):

  - smolserve: a finger plan both ways, a Nex directory and a long file read
    in windows, a Spartan page, its C{=:} link followed with input, and a
    missing path (Spartan 4);
  - jayhawk: a Spartan redirect, reported and not followed;
  - the hostile harness: a Nex server that never closes, ended by the
    deadline;

and private addresses refused in several spellings for every scheme.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.hostile_process import gophergem_env, spawn_hostile
from tests.helpers.smolweb_peers import running_jayhawk, running_smolserve

from .conftest import (
    LOOPBACK,
    mcp_session,
    run_async,
    tool_payload,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def jayhawk() -> Iterator[int]:
    with running_jayhawk(
        "# Spartan capsule\n=> about.gmi About\n=: /search Search the capsule\n"
    ) as port:
        yield port


PLAN = "Reading the small web.\n"
INDEX = "# Capsule\n=> about.gmi About\n=: /search.gmi Search\n=> nex://example.org/ Elsewhere\n"
LONG_LINE = "a line of a long Nex file\n"
LONG = LONG_LINE * 4000  # 104,000 characters: several windows of 50,000


@pytest.fixture(scope="module")
def peers() -> Iterator[dict[str, int]]:
    files = {
        "plan.txt": PLAN,
        "spartan/index.gmi": INDEX,
        "spartan/search.gmi": "# Results\n",
        "nex/long.txt": LONG,
    }
    with running_smolserve(files) as peer:
        (peer.root / "nex" / "posts").mkdir()
        yield {"finger": peer.finger, "spartan": peer.spartan, "nex": peer.nex}


def _env(**settings: str) -> dict[str, str]:
    store = Path(tempfile.mkdtemp(prefix="gophergem-smolweb-store-"))
    return gophergem_env(
        store,
        SMOLWEB_ALLOW_LOCAL_HOSTS="true",
        SMOLWEB_REQUESTS_PER_MINUTE="0",
        SMOLWEB_RESPECT_ROBOTS_TXT="false",
        **settings,
    )


def _calls(env: dict[str, str], *arguments: dict[str, Any]) -> list[dict[str, Any]]:
    async def body() -> list[dict[str, Any]]:
        async with mcp_session(env) as session:
            out = []
            for args in arguments:
                out.append(tool_payload(await session.call_tool("smolweb_fetch", args)))
            return out

    return run_async(body)  # type: ignore[no-any-return]


def test_finger_nex_and_spartan(peers: dict[str, int]) -> None:
    """Every kind a reader meets on smolserve, through the SDK's client over stdio."""
    finger = f"{LOOPBACK}:{peers['finger']}"
    nex = f"nex://{LOOPBACK}:{peers['nex']}"
    spartan = f"spartan://{LOOPBACK}:{peers['spartan']}"
    path_form, user_form, listing, first, page, missing = _calls(
        _env(),
        {"url": f"finger://{finger}/alice"},
        {"url": f"finger://alice@{finger}"},
        {"url": f"{nex}/"},
        {"url": f"{nex}/long.txt"},
        {"url": f"{spartan}/"},
        {"url": f"{spartan}/missing"},
    )
    for plan in (path_form, user_form):
        assert plan["kind"] == "text" and plan["text"] == PLAN, plan
        assert plan["request_info"]["url"] == f"finger://{finger}/alice"
    assert listing["kind"] == "gemtext", listing
    assert {link["url"] for link in listing["document"]["links"]} >= {
        f"{nex}/posts/",
        f"{nex}/long.txt",
    }
    assert first["kind"] == "text" and first["truncated"] is True
    assert first["total_chars"] == len(LONG) and first["text"] == LONG[: len(first["text"])]
    (rest,) = _calls(_env(), {"url": f"{nex}/long.txt", "offset": first["next_offset"]})
    assert rest["text"] == LONG[first["next_offset"] :][: len(rest["text"])]
    assert page["kind"] == "gemtext", page
    links = page["document"]["links"]
    assert links[1] == {"url": f"{spartan}/search.gmi", "text": "Search", "takes_input": True}
    assert links[2]["url"] == "nex://example.org/"
    assert missing["kind"] == "error" and missing["error"]["code"] == "PERMANENT_ERROR"
    assert missing["error"]["status"] == 4


def test_spartan_input_link(peers: dict[str, int]) -> None:
    """The =: link followed with input: the answer goes as the data block, never echoed."""
    spartan = f"spartan://{LOOPBACK}:{peers['spartan']}"
    (answer,) = _calls(_env(), {"url": f"{spartan}/search.gmi", "input": "secret words"})
    assert answer["kind"] == "gemtext", answer
    assert answer["request_info"]["has_query"] is True
    assert answer["request_info"]["url"] == f"{spartan}/search.gmi"
    assert "secret words" not in str(answer)


def test_spartan_redirect_not_followed(jayhawk: int) -> None:
    """jayhawk's redirect is reported with its absolute target, and not followed."""
    (moved,) = _calls(_env(), {"url": f"spartan://{LOOPBACK}:{jayhawk}/old"})
    assert moved["kind"] == "redirect", moved
    assert moved["new_url"] == f"spartan://{LOOPBACK}:{jayhawk}/index.gmi"
    assert moved["permanent"] is False and moved["cross_host"] is False


def test_nex_server_that_never_closes() -> None:
    """A Nex server that sends and holds the connection: what arrived, by the deadline."""
    (server,) = spawn_hostile(("nex", "never-close"))
    try:
        (result,) = _calls(_env(SMOLWEB_TIMEOUT_SECONDS="2"), {"url": server.url("/a.txt")})
    finally:
        server.stop()
    assert result["kind"] == "text", result
    assert result["incomplete_reason"] == "deadline"
    assert result["text"] == "All is well here.\n"


def test_private_addresses_blocked_for_every_scheme() -> None:
    """Local targets in several spellings are BLOCKED for each scheme (the default policy)."""
    urls = [
        f"{scheme}://{host}/"
        for scheme in ("finger", "nex", "spartan")
        for host in ("127.0.0.1", "2130706433", "0x7f.1", "[::1]", "[::ffff:127.0.0.1]")
    ]
    env = gophergem_env(Path(tempfile.mkdtemp(prefix="gophergem-smolweb-store-")))
    for url, result in zip(urls, _calls(env, *({"url": url} for url in urls)), strict=True):
        assert result["kind"] == "error" and result["error"]["code"] == "BLOCKED", (url, result)
