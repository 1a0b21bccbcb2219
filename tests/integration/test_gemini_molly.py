"""
Acceptance tests: C{python -m gophergem} driven by the MCP SDK's stdio client
against a real molly-brown on loopback (see C{gemini_peers.py} for how it is
run): every result kind, input round trips, redirects, 4x/5x, a client
certificate zone, and trust on first use across real server restarts.

The capsule is C{fixtures/capsule}; its CGI scripts answer the statuses a
file cannot (10, 11, 30/31 off-host, 40, 44, 59, and 60 for the
C{/members/} zone, which answers 20 once a client certificate is presented).
URLs naming other hosts (C{elsewhere.invalid}, C{https://localhost/}) are
only redirect targets, never fetched.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from .conftest import run_async, tool_payload
from .gemini_peers import (
    ElicitationRecorder,
    GeminiCerts,
    MollyBrown,
    gemini_session,
    same_fingerprint,
)

pytestmark = pytest.mark.integration

FETCH = "gemini_fetch"
BATCH = "gemini_batch_fetch"
TRUST_LIST = "gemini_trust_list"
TRUST_UPDATE = "gemini_trust_update"
CERT_LIST = "gemini_client_cert_list"
CERT_UPDATE = "gemini_client_cert_update"

# An answer that needs percent-encoding: space, "&", "?", "%", "/", "+", "#"
# and non-ASCII.  "+" must arrive as "+" (Gemini queries are not forms).
TRICKY_ANSWER = "Zoë & Bob? 100% / yes+no #1"

SECRET_ANSWER = "hunter2 ünïcode & more"

IDENTITY_KEYS = {"url", "host", "port", "path", "fingerprint", "not_before", "not_after", "expired"}


async def call(session: Any, tool: str, **arguments: Any) -> tuple[Any, dict[str, Any]]:
    result = await session.call_tool(tool, arguments)
    return result, tool_payload(result)


async def fetch(session: Any, url: str, **arguments: Any) -> tuple[Any, dict[str, Any]]:
    return await call(session, FETCH, url=url, **arguments)


def ok(result: Any, payload: dict[str, Any], kind: str) -> dict[str, Any]:
    assert not result.is_error, payload
    assert payload["kind"] == kind, payload
    return payload


def failed(result: Any, payload: dict[str, Any], code: str) -> dict[str, Any]:
    assert result.is_error is True, payload
    assert payload["kind"] == "error", payload
    assert payload["error"]["code"] == code, payload
    assert payload["error"]["message"], payload
    return payload["error"]


# --- result kinds ---------------------------------------------------------


async def check_gemtext_text_and_binary(
    session: Any, server: MollyBrown, certs: GeminiCerts
) -> None:
    root = server.root
    page = ok(*await fetch(session, server.url("/")), "gemtext")
    info = page["request_info"]
    assert info["url"] == server.url("/")
    assert (info["host"], info["port"], info["path"]) == ("localhost", server.port, "/")
    assert same_fingerprint(info["cert_fingerprint"], certs.original), info
    assert info["tls_version"] in {"TLSv1.2", "TLSv1.3"}
    assert page["size"] == (root / "index.gmi").stat().st_size
    assert page["cached"] is False
    lines = page["document"]["lines"]
    assert [line["content"] for line in lines] == (
        (root / "index.gmi").read_text(encoding="utf-8").splitlines()
    )
    assert lines[0] == {
        "type": "heading1",
        "content": "# The gophergem test capsule",
        "text": "The gophergem test capsule",
        "level": 1,
    }
    by_content = {line["content"]: line for line in lines}
    assert by_content["## Links"]["type"] == "heading2"
    assert by_content["* a list item"]["type"] == "list"
    assert by_content["> a quote"]["type"] == "quote"
    assert by_content["```sh"]["type"] == "preformat"
    assert by_content["```sh"].get("alt_text") == "sh"
    inside = by_content["=> not-a-link.gmi inside a preformatted block"]
    assert inside["type"] == "preformat" and "link" not in inside
    # Links come back resolved against the page's URL.
    base = server.url("")
    expected_links = [
        {"url": f"{base}/about.txt", "text": "About this capsule (plain text)"},
        {"url": f"{base}/sub/page.gmi", "text": "A page in a subdirectory"},
        {"url": f"{base}/gemlog/", "text": "The gemlog"},
        {"url": f"{base}/pic.png", "text": "A tiny PNG"},
        {
            "url": "gemini://elsewhere.invalid/capsule/",
            "text": "Another capsule (never fetched)",
        },
        {"url": f"{base}/up.gmi", "text": None},
    ]
    assert page["document"]["links"] == expected_links
    assert [line["link"] for line in lines if line["type"] == "link"] == expected_links

    sub = ok(*await fetch(session, server.url("/sub/page.gmi")), "gemtext")
    assert [link["url"] for link in sub["document"]["links"]] == [
        f"{base}/index.gmi",
        f"{base}/sub/sibling.gmi",
    ]

    again = ok(*await fetch(session, server.url("/")), "gemtext")
    assert again["cached"] is True and again["document"] == page["document"]

    text = ok(*await fetch(session, server.url("/about.txt")), "success")
    assert text["content"] == (root / "about.txt").read_text(encoding="utf-8")
    assert text["mime_type"]["type"] == "text"
    assert text["mime_type"]["subtype"] == "plain"
    assert text["size"] == (root / "about.txt").stat().st_size
    assert text["truncated"] is False

    result, binary = await fetch(session, server.url("/pic.png"))
    ok(result, binary, "binary")
    assert binary["mime_type"] == "image/png"
    assert binary["size"] == (root / "pic.png").stat().st_size
    assert binary["note"]
    assert not {"content", "text", "document"} & set(binary), sorted(binary)
    assert "PNG" not in result.content[0].text


async def check_input_round_trips(session: Any, server: MollyBrown) -> None:
    asked = ok(*await fetch(session, server.url("/cgi-bin/ask")), "input")
    assert asked["prompt"] == "What is your name?"
    assert asked["sensitive"] is False

    mark = len(server.access_lines())
    answered = ok(*await fetch(session, server.url("/cgi-bin/ask"), input=TRICKY_ANSWER), "success")
    assert answered["content"] == f"You said: {TRICKY_ANSWER}\n"
    info = answered["request_info"]
    assert info["url"] == server.url("/cgi-bin/ask")  # never the query
    assert info["has_query"] is True

    secret = ok(*await fetch(session, server.url("/cgi-bin/secret")), "input")
    assert secret["prompt"] == "Passphrase?"
    assert secret["sensitive"] is True
    result, revealed = await fetch(session, server.url("/cgi-bin/secret"), input=SECRET_ANSWER)
    ok(result, revealed, "success")
    # The CGI proves what arrived by its digest; the answer itself is nowhere.
    digest = hashlib.sha256(SECRET_ANSWER.encode("utf-8")).hexdigest()
    assert revealed["content"] == f"Secret received, sha256: {digest}\n"
    assert revealed["request_info"]["has_query"] is True
    for shown in (str(revealed), result.content[0].text):
        assert "hunter2" not in shown and "hunter2" not in unquote(shown)

    sent = server.requests_since(mark, at_least=3)
    assert [status for status, _ in sent] == ["20", "11", "20"], sent
    query = sent[0][1].split("?", 1)[1]
    assert " " not in query and unquote(query) == TRICKY_ANSWER, sent[0]


async def check_redirects_not_followed(session: Any, server: MollyBrown) -> None:
    cases = [
        # path, new_url, permanent, cross_host, scheme
        ("/old.gmi", server.url("/new.gmi"), False, False, "gemini"),  # [TempRedirects]
        ("/moved.gmi", server.url("/new.gmi"), True, False, "gemini"),  # [PermRedirects]
        ("/cgi-bin/status/relative", server.url("/new.gmi"), False, False, "gemini"),
        ("/cgi-bin/status/away", "gemini://elsewhere.invalid/capsule/", True, True, "gemini"),
        ("/cgi-bin/status/web", "https://localhost/elsewhere", False, None, "https"),
    ]

    mark = len(server.access_lines())
    for path, new_url, permanent, cross_host, scheme in cases:
        got = ok(*await fetch(session, server.url(path)), "redirect")
        assert got["new_url"] == new_url, (path, got)
        assert got["permanent"] is permanent, (path, got)
        assert got["scheme"] == scheme, (path, got)
        assert isinstance(got["cross_host"], bool), (path, got)
        if cross_host is not None:
            assert got["cross_host"] is cross_host, (path, got)
    sent = server.requests_since(mark, at_least=len(cases))
    assert [url for _, url in sent] == [server.url(path) for path, *_ in cases], sent


async def check_failures_then_slow_down(session: Any, server: MollyBrown) -> None:
    error = failed(*await fetch(session, server.url("/cgi-bin/status/40")), "TEMPORARY_ERROR")
    assert error["status"] == 40 and error["temporary"] is True
    assert error["meta"] == "The test capsule is having a bad day"
    assert error["next_step"]

    error = failed(*await fetch(session, server.url("/no-such-page.gmi")), "PERMANENT_ERROR")
    assert error["status"] == 51 and error["temporary"] is False
    assert error["meta"] and error["next_step"]

    error = failed(*await fetch(session, server.url("/cgi-bin/status/59")), "PERMANENT_ERROR")
    assert error["status"] == 59 and error["temporary"] is False
    assert error["meta"] == "Bad request (test)"
    assert error["next_step"]

    # 44 last: it backs this host off for the rest of the session.
    error = failed(*await fetch(session, server.url("/cgi-bin/status/44")), "TEMPORARY_ERROR")
    assert error["status"] == 44 and error["temporary"] is True
    assert error["meta"] == "30"
    assert error["next_step"]
    mark = len(server.access_lines())
    error = failed(*await fetch(session, server.url("/new.gmi")), "SLOW_DOWN")  # not cached
    assert 0 < error["retry_after_seconds"] <= 30, error
    assert server.settled_requests_since(mark) == [], "SLOW_DOWN must send nothing"


async def check_batch(session: Any, server: MollyBrown) -> None:
    pool = [
        ("/", "gemtext"),
        ("/about.txt", "success"),
        ("/pic.png", "binary"),
        ("/cgi-bin/ask", "input"),
        ("/old.gmi", "redirect"),
        ("/members/page", "certificate"),
        ("/no-such-page.gmi", "error"),
    ]

    urls = [server.url(path) for path, _ in pool] + ["gopher://localhost/"]
    result, payload = await call(session, BATCH, urls=urls)
    assert result.is_error is not True, payload
    kinds = [item["kind"] for item in payload["result"]]
    assert kinds == [kind for _, kind in pool] + ["error"], payload
    assert payload["result"][-1]["error"]["code"] == "INVALID_REQUEST"
    for (path, _), item in zip(pool, payload["result"][:-1], strict=True):
        assert item["request_info"]["url"] == server.url(path), item

    result, payload = await call(session, BATCH, urls=[server.url("/")] * 51)
    assert result.is_error is True
    assert payload["error"]["code"] == "INVALID_REQUEST", payload


def test_result_kinds_input_and_redirects(
    molly_brown: MollyBrown, gemini_env: dict[str, str], gemini_certs: GeminiCerts
) -> None:
    async def body() -> None:
        async with gemini_session(gemini_env) as session:
            await check_gemtext_text_and_binary(session, molly_brown, gemini_certs)
            await check_input_round_trips(session, molly_brown)
            await check_redirects_not_followed(session, molly_brown)

    run_async(body)


def test_batch_then_failures_and_slow_down(
    molly_brown: MollyBrown, gemini_env: dict[str, str]
) -> None:
    async def body() -> None:
        async with gemini_session(gemini_env) as session:
            await check_batch(session, molly_brown)
            await check_failures_then_slow_down(session, molly_brown)  # 44 last: it backs off

    run_async(body)


# --- client certificates -----------------------------------------------------


def test_client_certificate_zone(molly_brown: MollyBrown, gemini_env: dict[str, str]) -> None:
    server = molly_brown
    page_url = server.url("/members/page")
    scope = server.url("/members/")
    store = Path(gemini_env["GEMINI_CLIENT_CERTS_STORAGE_PATH"])

    async def body() -> None:
        async with gemini_session(gemini_env) as session:  # a client that cannot be asked
            wanted = ok(*await fetch(session, page_url), "certificate")
            assert wanted["status"] == 60 and wanted["required"] is True
            assert wanted["message"] == "Members only: present a client certificate"
            assert wanted["next_step"]
            assert ok(*await call(session, CERT_LIST), "client_cert_list")["entries"] == []

            created = ok(
                *await call(session, CERT_UPDATE, url=scope, action="create"), "client_cert_update"
            )
            assert created["action"] == "create"
            identity = created["entry"]
            assert set(identity) == IDENTITY_KEYS, identity
            assert (identity["host"], identity["port"], identity["path"]) == (
                "localhost",
                server.port,
                "/members/",
            )
            assert identity["url"] == scope and identity["expired"] is False
            fingerprint = identity["fingerprint"]
            assert fingerprint.startswith("sha256:") and len(fingerprint) == 7 + 64

            error = failed(
                *await call(session, CERT_UPDATE, url=scope, action="create"), "CERTIFICATE_EXISTS"
            )
            assert fingerprint in error["message"] + str(error.get("next_step")), error

            listed = ok(*await call(session, CERT_LIST, host="localhost"), "client_cert_list")
            assert listed["entries"] == [identity]
            assert "PRIVATE" not in str(listed) and str(store) not in str(listed)
            keys = list(store.rglob("*key*"))
            assert keys, sorted(store.rglob("*"))
            for key in keys:
                assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
            assert stat.S_IMODE(store.stat().st_mode) == 0o700

            # The same URL now succeeds, and the CGI saw exactly our certificate.
            member = ok(*await fetch(session, page_url), "gemtext")
            contents = [line["content"] for line in member["document"]["lines"]]
            assert contents == ["# Members", f"client-cert: {fingerprint[7:]}"], contents
            # Outside the scope nothing is presented.
            outside = ok(*await fetch(session, server.url("/cgi-bin/whoami")), "success")
            assert outside["content"] == "client-cert: none\n"

            wrong = "sha256:" + "0" * 64
            failed(
                *await call(session, CERT_UPDATE, url=scope, action="remove", fingerprint=wrong),
                "FINGERPRINT_MISMATCH",
            )
            assert ok(*await call(session, CERT_LIST), "client_cert_list")["entries"] == [identity]

            removed = ok(
                *await call(
                    session, CERT_UPDATE, url=scope, action="remove", fingerprint=fingerprint
                ),
                "client_cert_update",
            )
            assert removed["action"] == "remove"
            assert removed["entry"]["fingerprint"] == fingerprint
            assert ok(*await call(session, CERT_LIST), "client_cert_list")["entries"] == []
            assert not list(store.rglob(f"*{fingerprint[7:]}*"))

            again = ok(*await fetch(session, page_url), "certificate")
            assert again["status"] == 60

    run_async(body)


def test_client_certificate_asks_the_user(
    molly_brown: MollyBrown, gemini_env: dict[str, str]
) -> None:
    server = molly_brown
    scope = server.url("/members/")
    elicitation = ElicitationRecorder(answers=["decline"], default="accept")

    async def body() -> None:
        async with gemini_session(gemini_env, elicitation) as session:
            failed(*await call(session, CERT_UPDATE, url=scope, action="create"), "USER_DECLINED")
            assert ok(*await call(session, CERT_LIST), "client_cert_list")["entries"] == []

            created = ok(
                *await call(session, CERT_UPDATE, url=scope, action="create"), "client_cert_update"
            )
            fingerprint = created["entry"]["fingerprint"]
            member = ok(*await fetch(session, server.url("/members/page")), "gemtext")
            assert member["document"]["lines"][-1]["content"] == f"client-cert: {fingerprint[7:]}"

            ok(
                *await call(
                    session, CERT_UPDATE, url=scope, action="remove", fingerprint=fingerprint
                ),
                "client_cert_update",
            )
            assert ok(*await call(session, CERT_LIST), "client_cert_list")["entries"] == []

        questions = [asked.message for asked in elicitation.asked]
        assert len(questions) == 3, questions  # declined create, create, remove
        assert all(scope in question for question in questions), questions

    run_async(body)


# --- trust on first use, across real restarts ----------------------------------


async def pins(session: Any) -> list[dict[str, Any]]:
    return ok(*await call(session, TRUST_LIST, host="localhost"), "trust_list")["entries"]


def nothing_requested(server: MollyBrown, mark: int) -> None:
    """
    No request reached molly-brown since C{mark}.  It logs every connection;
    one that ended before a request line arrived (our aborted handshake)
    shows as status 40 with URL "-".
    """
    sent = server.settled_requests_since(mark)
    assert all(url == "-" for _, url in sent), f"a refused certificate saw a request: {sent}"


def test_tofu_new_key_refused_and_same_key_reissue_accepted(
    molly_brown_own: MollyBrown, gemini_env: dict[str, str], gemini_certs: GeminiCerts
) -> None:
    server, certs = molly_brown_own, gemini_certs
    root_url, about_url = server.url("/"), server.url("/about.txt")

    async def body() -> None:
        async with gemini_session(gemini_env) as session:  # a client that cannot be asked
            page = ok(*await fetch(session, root_url), "gemtext")
            assert same_fingerprint(page["request_info"]["cert_fingerprint"], certs.original)
            assert "tofu_warning" not in page["request_info"]
            entries = await pins(session)
            assert len(entries) == 1, entries
            assert (entries[0]["host"], entries[0]["port"]) == ("localhost", server.port)
            assert same_fingerprint(entries[0]["fingerprint"], certs.original)
            assert entries[0]["expired"] is False and entries[0]["expires"]

            # A new key: refused during the handshake, before any request.
            server.restart(certs.rekey)
            mark = len(server.access_lines())
            for url, refresh in ((root_url, True), (about_url, False)):
                error = failed(*await fetch(session, url, refresh=refresh), "CERTIFICATE_CHANGED")
                assert same_fingerprint(error["pinned_fingerprint"], certs.original), error
                assert same_fingerprint(error["presented_fingerprint"], certs.rekey), error
                assert error["pinned_expires"] and error["pinned_expired"] is False, error
                assert error["next_step"]
            nothing_requested(server, mark)
            assert await pins(session) == entries

            # remove must name the pinned fingerprint; nothing changes otherwise.
            failed(
                *await call(
                    session,
                    TRUST_UPDATE,
                    host="localhost",
                    port=server.port,
                    action="remove",
                    fingerprint=certs.rekey.fingerprint,
                ),
                "FINGERPRINT_MISMATCH",
            )
            assert await pins(session) == entries
            assert ok(*await call(session, TRUST_LIST), "trust_list")["entries"] == entries

            # A routine renewal of the pinned key: accepted, with a warning, pin updated.
            server.restart(certs.reissue)
            result, renewed = await fetch(session, root_url, refresh=True)
            info = ok(result, renewed, "gemtext")["request_info"]
            assert same_fingerprint(info["cert_fingerprint"], certs.reissue), info
            assert info.get("tofu_warning"), info
            assert "tofu_warning" in result.content[0].text  # the model sees it too
            entries = await pins(session)
            assert len(entries) == 1, entries
            assert same_fingerprint(entries[0]["fingerprint"], certs.reissue), entries

    run_async(body)


def test_tofu_new_key_with_user_consent(
    molly_brown_own: MollyBrown, gemini_env: dict[str, str], gemini_certs: GeminiCerts
) -> None:
    server, certs = molly_brown_own, gemini_certs
    root_url = server.url("/")
    elicitation = ElicitationRecorder(answers=["decline", "accept"])

    async def body() -> None:
        async with gemini_session(gemini_env, elicitation) as session:
            ok(*await fetch(session, root_url), "gemtext")  # first use: pinned, nobody asked
            assert elicitation.asked == []
            before = await pins(session)
            assert same_fingerprint(before[0]["fingerprint"], certs.original)

            server.restart(certs.rekey)
            mark = len(server.access_lines())
            error = failed(*await fetch(session, root_url, refresh=True), "CERTIFICATE_CHANGED")
            assert "declined" in error["next_step"], error
            assert len(elicitation.asked) == 1
            question = elicitation.asked[0].message.replace(":", "").lower()
            assert certs.original.hex in question and certs.rekey.hex in question, question
            assert f"localhost{server.port}" in question, question
            assert await pins(session) == before
            nothing_requested(server, mark)

            mark = len(server.access_lines())
            page = ok(*await fetch(session, root_url, refresh=True), "gemtext")
            assert len(elicitation.asked) == 2
            assert same_fingerprint(page["request_info"]["cert_fingerprint"], certs.rekey)
            assert page["document"]["lines"][0]["text"] == "The gophergem test capsule"
            entries = await pins(session)
            assert len(entries) == 1 and same_fingerprint(entries[0]["fingerprint"], certs.rekey)
            requested = [url for _, url in server.requests_since(mark, at_least=1) if url != "-"]
            assert requested == [root_url], requested

            # Then a routine renewal of the newly trusted key: no question, a warning.
            server.restart(certs.rekey_reissue)
            renewed = ok(*await fetch(session, root_url, refresh=True), "gemtext")
            info = renewed["request_info"]
            assert same_fingerprint(info["cert_fingerprint"], certs.rekey_reissue), info
            assert info.get("tofu_warning"), info
            assert len(elicitation.asked) == 2, "a same-key reissue must not ask"

    run_async(body)
