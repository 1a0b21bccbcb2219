# -*- test-case-name: tests.test_cli_titan -*-
"""
C{gophergem titan upload URL FILE|-}: upload one file to a Titan server under
the same policy as the C{titan_upload} tool, asking the person at the
terminal first (the same question), or taking C{--yes}.

Consent is never implied: without a terminal to ask at and without
C{--yes}, nothing is sent.  The token is never an argument (it would stay
in the shell's history and in C{ps}): it is read from C{--token-file} or
typed at C{--ask-token}'s prompt.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gophergem.cli._runner import _fail, _format_options
from gophergem.config import Config


def add_parser(commands: Any, command: Any) -> None:
    """The C{gophergem titan upload URL FILE|-} command."""
    titan = command(
        commands, "titan", "ACTION ...", "Upload to a Titan server (titan://), on your yes."
    )
    actions = titan.add_subparsers(
        dest="titan_command", metavar="ACTION", required=True, prog="gophergem titan"
    )
    upload = command(
        actions,
        "upload",
        "[--mime TYPE] [--token-file PATH | --ask-token] [--yes] [--format readable|json] "
        "[settings] URL FILE|-",
        "Upload FILE (- for standard input) to the titan:// URL, after asking you (y/N) "
        "with the host, path, size, type and whether a token is sent. An empty file deletes "
        "the page. Off unless TITAN_ALLOWED_HOSTS names the host.",
    )
    upload.add_argument("url", metavar="URL")
    upload.add_argument("file", metavar="FILE|-")
    upload.add_argument(
        "--mime", metavar="TYPE", default="text/gemini", help="Its MIME type (text/gemini)."
    )
    token = upload.add_mutually_exclusive_group()
    token.add_argument(
        "--token-file",
        metavar="PATH",
        help="Send the upload token in this file (its first line); never on the command line.",
    )
    token.add_argument(
        "--ask-token", action="store_true", help="Type the upload token at a hidden prompt."
    )
    upload.add_argument(
        "--yes",
        action="store_true",
        help="Do not ask: you consent to this upload. Without it, and without a terminal "
        "to ask at, nothing is sent.",
    )
    _format_options(
        upload,
        "How to print the server's answer: readable (the default at a terminal) or json.",
    )


def _read_content(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    with open(name, "rb") as file:
        return file.read()


def _read_token(args: argparse.Namespace) -> str | None:
    if args.token_file is not None:
        with open(args.token_file, encoding="utf-8") as file:
            return file.readline().rstrip("\r\n")
    if args.ask_token:
        import getpass

        if not sys.stdin.isatty() or args.file == "-":
            raise _Usage("--ask-token needs a terminal on standard input; use --token-file.")
        return getpass.getpass("Titan upload token: ")
    return None


class _Usage(Exception):
    """A usage error, one line."""


def _ask(question: str) -> bool:
    """Put C{question} to the person at the terminal; only y or yes is a yes."""
    print(question, file=sys.stderr)
    print("Upload? [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = input()
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def run(config: Config, args: argparse.Namespace) -> int:
    from gophergem.errors import GophergemError

    try:
        content = _read_content(args.file)
        token = _read_token(args)
    except _Usage as error:
        return _fail(str(error))
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        return _fail(f"cannot read {getattr(error, 'filename', None) or args.file}: {reason}")
    from twisted.internet import reactor

    from gophergem.fetcher import Fetcher

    fetcher = Fetcher.from_config(config, reactor)
    try:
        upload = fetcher.titan_plan(args.url, content, mime=args.mime, token=token)
    except GophergemError as error:
        return _fail(f"{error.code}: {error.message}", 2 if error.code == "INVALID_REQUEST" else 1)
    if not args.yes:
        if args.file == "-" or not sys.stdin.isatty():
            return _fail(
                "CONSENT_UNAVAILABLE: every upload needs your yes, and there is no terminal "
                "to ask at (standard input is not one); nothing was sent. Pass --yes to "
                "consent.",
                1,
            )
        if not _ask(upload.question()):
            return _fail("USER_DECLINED: you declined the upload; nothing was sent.", 1)
    return _send(fetcher, reactor, args, content, token)


def _send(
    fetcher: Any, reactor: Any, args: argparse.Namespace, content: bytes, token: str | None
) -> int:
    from gophergem.cli.fetch import show_outcome

    d = fetcher.titan_upload(args.url, content, mime=args.mime, token=token)
    return show_outcome(reactor, d, args, "upload", invalid_is_usage=False)
