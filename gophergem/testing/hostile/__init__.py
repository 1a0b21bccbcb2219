# -*- test-case-name: tests.test_hostile,tests.test_testing_hostile,tests.test_hostile_smolweb -*-
"""
Misbehaving Gopher, Gemini, Finger, Nex and Spartan servers, for showing
that no server behaviour can crash, hang, exhaust or mislead a client.

Each server plays one named L{Behaviour} on every connection: trickling a
byte a second, never closing, sending forever, breaking the framing, lying
about its certificate, redirecting somewhere private, and so on (see
L{GOPHER_BEHAVIOURS}, L{GEMINI_BEHAVIOURS}, L{FINGER_BEHAVIOURS},
L{NEX_BEHAVIOURS} and L{SPARTAN_BEHAVIOURS}, or run C{python -m
gophergem.testing.hostile --list}).  The same server runs in two places:

  - in memory, on a L{gophergem.testing.MemoryNetwork} (time is the
    network's fake clock, so a server that trickles for an hour costs
    nothing)::

        net = MemoryNetwork()
        net.resolver.add("bad.example", "192.0.2.66")
        server = listen_hostile(net, "192.0.2.66", 70,
                                HostileGopherServer.named("trickle", net.reactor))
        result = net.run(net.fetcher(timeout_seconds=5).gopher("gopher://bad.example/"),
                         advance=1)
        assert result.error.code == "TIMEOUT"

  - on a real loopback port, for tests that drive a whole process: in this
    process with L{serve_loopback}, or in a subprocess of its own::

        python -m gophergem.testing.hostile --protocol gemini \\
            --behaviour no-close-notify --port 0
        # prints the port it listens on (127.0.0.1 only), then serves
        # until killed

Every server records what it saw (C{requests}), how many connections it
accepted and still has open, and how many bytes it wrote, so a test can show
that a client cut a flood at its cap and left nothing open.

The Finger, Nex and Spartan servers are plain TCP, as Gopher's:
L{HostilePlainServer.playing}C{("spartan", "huge-header", clock)}.

The Gemini servers speak TLS through their own wrapping factory
(L{HostileGeminiServer.wire_factory}); L{listen_hostile} and
L{serve_loopback} use it.  Application-level behaviours also work under
L{MemoryNetwork.listen_gemini<gophergem.testing.MemoryNetwork.listen_gemini>}
(pass C{tls=server.tls()}), but the ones that misbehave at the TLS layer
(C{no-close-notify}, the C{tls-*} and C{cert-*} ones) need C{wire_factory}.

Loopback only: L{serve_loopback} and the command line refuse any interface
outside 127.0.0.0/8 and ::1.
"""

from __future__ import annotations

from gophergem.testing.hostile._command import main
from gophergem.testing.hostile._engine import (
    CUT_DELAY,
    FLOOD_INTERVAL,
    FLOOD_LIMIT,
    TRICKLE_INTERVAL,
    Behaviour,
    HostileExchange,
    ProtocolName,
    Respond,
)
from gophergem.testing.hostile._finger import FINGER_BEHAVIOURS, GOOD_PLAN
from gophergem.testing.hostile._gemini import GEMINI_BEHAVIOURS, GOOD_GEMTEXT
from gophergem.testing.hostile._gopher import GOOD_MENU, GOPHER_BEHAVIOURS
from gophergem.testing.hostile._nex import GOOD_DOCUMENT, GOOD_LISTING, NEX_BEHAVIOURS
from gophergem.testing.hostile._servers import (
    BEHAVIOURS,
    PLAIN_BEHAVIOURS,
    HostileGeminiServer,
    HostileGopherServer,
    HostilePlainServer,
    HostileServer,
    listen_hostile,
    serve_loopback,
)
from gophergem.testing.hostile._spartan import GOOD_PAGE, SPARTAN_BEHAVIOURS
from gophergem.testing.hostile._tls import HostileTLS

__all__ = [
    "BEHAVIOURS",
    "CUT_DELAY",
    "FINGER_BEHAVIOURS",
    "FLOOD_INTERVAL",
    "FLOOD_LIMIT",
    "GEMINI_BEHAVIOURS",
    "GOOD_DOCUMENT",
    "GOOD_GEMTEXT",
    "GOOD_LISTING",
    "GOOD_MENU",
    "GOOD_PAGE",
    "GOOD_PLAN",
    "GOPHER_BEHAVIOURS",
    "NEX_BEHAVIOURS",
    "PLAIN_BEHAVIOURS",
    "SPARTAN_BEHAVIOURS",
    "TRICKLE_INTERVAL",
    "Behaviour",
    "HostileExchange",
    "HostileGeminiServer",
    "HostileGopherServer",
    "HostilePlainServer",
    "HostileServer",
    "HostileTLS",
    "ProtocolName",
    "Respond",
    "listen_hostile",
    "main",
    "serve_loopback",
]
