"""
Tests for L{gophergem.advice}: what to do next is said once, and phrased for
the front door that answers: MCP tools for a model, console commands for a
person at a terminal.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import gophergem
from gophergem import advice
from gophergem.cli import main
from gophergem.errors import GophergemError
from gophergem.fetcher import gemini as gemini_pipeline
from gophergem.mcp.schemas import OUTPUT_MODELS
from gophergem.policy import robots
from gophergem.url import GeminiURL

TOOL_NAMES = sorted(OUTPUT_MODELS)


@pytest.fixture(autouse=True)
def no_global_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """Logging is process-wide: main() must not start it here."""
    import gophergem._log

    monkeypatch.setattr(gophergem._log, "start_logging", lambda *a, **k: None)


def _refusal(text: str) -> GophergemError:
    with pytest.raises(GophergemError) as raised:
        GeminiURL.from_text(text)
    return raised.value


def test_wrong_scheme_names_a_tool_or_a_command() -> None:
    """The same refusal names gopher_fetch through MCP and gophergem fetch at a terminal."""
    error = _refusal("gopher://example.org/1/")
    assert error.message == "This is a gopher:// URL; use the gopher_fetch tool for it."
    assert error.next_step == "Call gopher_fetch with the same URL."
    with advice.phrased_for(advice.COMMANDS):
        error = _refusal("gopher://example.org/1/")
    assert error.message == "This is a gopher:// URL; use gophergem fetch for it."
    assert error.next_step == "Run gophergem fetch with the same URL."
    assert _refusal("gopher://example.org/1/").next_step == "Call gopher_fetch with the same URL."


@pytest.mark.parametrize(("status", "presented"), [(60, False), (61, False), (62, False)])
def test_certificate_advice_names_the_command_with_the_url(status: int, presented: bool) -> None:
    """A 6x page advises gemini_client_cert_update through MCP, the whole command at a terminal."""
    url = "gemini://capsule.example/private/"
    for_tools = gemini_pipeline._certificate_advice(status, presented, url)
    assert "(gemini_client_cert_update create)" in for_tools
    assert "ask the user" in for_tools.lower()
    with advice.phrased_for(advice.COMMANDS):
        for_commands = gemini_pipeline._certificate_advice(status, presented, url)
    assert f"(gophergem identity create {url})" in for_commands
    assert not [name for name in TOOL_NAMES if name in for_commands]


def test_robots_back_off_is_said_only_by_a_process_that_remembers() -> None:
    """The server says robots.txt is not asked again before then; a one-shot command does not."""
    cause = GophergemError(message="robots.txt answered 40.")
    assert robots._unavailable(cause, 60).next_step == (
        "Try again in 60 seconds; robots.txt is not asked for again before then."
    )
    with advice.phrased_for(advice.COMMANDS):
        assert robots._unavailable(cause, 1).next_step == "Try again in 1 second."


def test_front_door_is_restored() -> None:
    """Leaving the block (even by an exception) gives the previous phrasing back."""
    with pytest.raises(RuntimeError), advice.phrased_for(advice.COMMANDS):
        assert advice.call() == "Run"
        raise RuntimeError
    assert advice.call() == "Call"
    with pytest.raises(ValueError):
        advice.phrased_for("carrier pigeon").__enter__()


# --- at the terminal, end to end -------------------------------------------------------


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    return {
        "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "tofu.json"),
        "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "identities"),
        "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json"),
        "HOME": str(tmp_path),
    }


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["identity", "create", "gopher://example.org/"], "use gophergem fetch for it"),
        (["identity", "create", "--json", "gopher://example.org/"], "Run gophergem fetch"),
        (["feeds", "unsubscribe", "--json", "gemini://example.org/"], "Run gophergem feeds list"),
    ],
)
def test_commands_give_command_advice(
    argv: list[str], said: str, environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """What a command prints names commands, never an MCP tool."""
    assert main(argv, environ) != 0
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert said in shown
    assert not [name for name in TOOL_NAMES if name in shown], shown


def test_trust_and_identity_mismatch_advice(
    environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Removing with the wrong fingerprint says to read it with the list command."""
    fp = "sha256:" + "ab" * 32
    other = "sha256:" + "cd" * 32
    assert main(["trust", "pin", "capsule.example", fp], environ) == 0
    assert main(["identity", "create", "gemini://capsule.example/"], environ) == 0
    capsys.readouterr()
    assert main(["trust", "remove", "--json", "capsule.example", other], environ) == 1
    pin_error = json.loads(capsys.readouterr().out)["error"]
    assert pin_error["next_step"] == "Read the current fingerprint with gophergem trust list first."
    assert main(["identity", "remove", "--json", "gemini://capsule.example/", other], environ) == 1
    identity_error = json.loads(capsys.readouterr().out)["error"]
    assert identity_error["next_step"] == "Read it with gophergem identity list first."


# --- no advice names a tool except through this vocabulary -----------------------------


def _strings_outside_docstrings(tree: ast.AST) -> list[str]:
    not_messages = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                not_messages.add(id(body[0].value))
        if isinstance(node, ast.Dict):
            # A payload's kind names data, not a tool ("feed_updates" is both).
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "kind":
                    not_messages.add(id(value))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in not_messages
    ]


def test_no_message_outside_mcp_names_a_tool() -> None:
    """
    Below the MCP layer, no string names a tool: advice that names one goes
    through the vocabulary of L{gophergem.advice}, so a terminal gets a
    command instead.  (The MCP layer itself, and the console script's MCP
    surface, may name tools; a payload's C{kind} names data, even where it
    spells a tool's name, like C{feed_updates}.)
    """
    root = Path(gophergem.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("mcp/") or relative == "advice.py":
            continue
        for text in _strings_outside_docstrings(ast.parse(path.read_text("utf-8"))):
            found += [(relative, name) for name in TOOL_NAMES if name in text]
    assert found == []
