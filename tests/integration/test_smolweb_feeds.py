"""
Following the small web as a user would check it: the MCP SDK's own client
over stdio (C{python -m gophergem}) subscribes to a Spartan gemlog, a Nex
directory and a Finger plan served by smolserve on 127.0.0.1, the files
change, and C{feed_updates} reports what changed, once.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.hostile_process import gophergem_env
from tests.helpers.smolweb_peers import running_smolserve

from .conftest import LOOPBACK, mcp_session, run_async, tool_payload

pytestmark = pytest.mark.integration

GEMLOG = "# Spartan log\n=> 2026-11-30-post.gmi 2026-11-30 - A post\n"
LISTING_POST = "A post over Nex.\n"


def test_spartan_nex_and_finger_subscriptions_report_what_changed() -> None:
    files = {
        "plan.txt": "Reading the small web.\n",
        "spartan/log/index.gmi": GEMLOG,
        "nex/posts/first.txt": LISTING_POST,
    }
    with running_smolserve(files) as peer, tempfile.TemporaryDirectory() as store:
        env = gophergem_env(
            Path(store),
            SMOLWEB_ALLOW_LOCAL_HOSTS="true",
            SMOLWEB_REQUESTS_PER_MINUTE="0",
            SMOLWEB_RESPECT_ROBOTS_TXT="false",
            GOPHERGEM_FEEDS_STORAGE_PATH=str(Path(store) / "feeds.json"),
        )
        spartan = f"spartan://{LOOPBACK}:{peer.spartan}/log/"
        nex = f"nex://{LOOPBACK}:{peer.nex}/posts/"
        finger = f"finger://alice@{LOOPBACK}:{peer.finger}"

        async def body() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
            async with mcp_session(env) as session:

                async def call(name: str, **args: Any) -> dict[str, Any]:
                    return tool_payload(await session.call_tool(name, args))

                subscribed = [
                    await call("feed_subscribe", url=url) for url in (spartan, nex, finger)
                ]
                nothing = await call("feed_updates")
                (peer.root / "spartan" / "log" / "index.gmi").write_text(
                    GEMLOG + "=> 2026-12-04-news.gmi 2026-12-04 - News\n", encoding="utf-8"
                )
                (peer.root / "nex" / "posts" / "second.txt").write_text("Two.\n", "utf-8")
                peer.plan.write_text("\nGone climbing.\nBack on Monday.\n", encoding="utf-8")
                changed = await call("feed_updates")
                return subscribed, nothing, changed

        subscribed, nothing, changed = run_async(body)

    assert [(s["kind"], s["feed_type"]) for s in subscribed] == [
        ("subscription", "gemsub"),
        ("subscription", "page"),
        ("subscription", "plan"),
    ]
    assert subscribed[2]["url"] == f"finger://{LOOPBACK}:{peer.finger}/alice"
    assert (nothing["entries"], nothing["checked"], nothing["errors"]) == ([], 3, [])
    found = {(e["feed_url"], e["title"], e["url"].partition("#")[0]) for e in changed["entries"]}
    assert found == {
        (spartan, "News", f"spartan://{LOOPBACK}:{peer.spartan}/log/2026-12-04-news.gmi"),
        (nex, "second.txt", f"{nex}second.txt"),
        (subscribed[2]["url"], "Gone climbing.", subscribed[2]["url"]),
    }
    assert changed["errors"] == []
