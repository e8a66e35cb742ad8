"""§3.2 client addresses as the OS reads them (issue 15 §1): spellings, names, pinned calls.

Nothing here sends a packet off this host: refused addresses are refused before any connect,
names are answered by a resolver stub at `AddressPolicy.resolve` (no /etc/hosts, no DNS), and
every listener is on loopback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from http import HTTPStatus
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from websockets.asyncio.server import serve

from master.client_calls import ClientCaller, NodeCallError
from master.services.addresses import (
    AddressPolicy,
    AddressRefused,
    refusal,
)
from master.services.pinning import connect_pinned
from master.storage.schema import nodes
from rawp.errors import BadRequest

LOOPBACK = [
    "127.0.0.1",
    "127.1",
    "127.0.1",
    "2130706433",
    "0x7f000001",
    "0X7F000001",
    "0177.0.0.1",
    "0177.0.0.01",
    "017700000001",
    "0x7f.0.0.1",
    "0x7f.1",
    "0177.1",
    "0x7f.0x0.0x0.0x1",
    "127.000.000.001",
    "127.0.0.1.",
    "127.255.255.254",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::127.0.0.1]",  # IPv4-compatible
    "[64:ff9b::127.0.0.1]",  # NAT64
    "[2002:7f00:1::]",  # 6to4
    "localhost",
    "LOCALHOST",
    "localhost.",
    "localhost.localdomain",
    "ip6-localhost",
    "app.localhost",
]
UNSPECIFIED = [
    "0.0.0.0",
    "0",
    "0x0",
    "00",
    "0.0",
    "0.1.2.3",  # "this network", 0.0.0.0/8
    "[::]",
    "[::ffff:0.0.0.0]",
]
LINK_LOCAL = [
    "169.254.169.254",  # the cloud metadata service
    "169.254.43518",
    "2852039166",
    "0xa9fea9fe",
    "0251.0376.0251.0376",
    "0xa9.0xfe.0xa9.0xfe",
    "169.254.169.254.",
    "[fe80::1]",
    "[FE80::1]",
    "[fe80::1%25eth0]",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[64:ff9b::a9fe:a9fe]",
]
NEVER_CALLABLE = ["224.0.0.1", "255.255.255.255", "240.0.0.1", "[ff02::1]", "[::1%25lo]"]
ACCEPTED = [
    ("10.0.0.5", "10.0.0.5"),
    ("10.1", "10.0.0.1"),
    ("172.16.3.4", "172.16.3.4"),
    ("192.168.1.20", "192.168.1.20"),
    ("0xc0a80114", "192.168.1.20"),
    ("0300.0250.1.024", "192.168.1.20"),
    ("100.64.0.1", "100.64.0.1"),  # CGNAT (Tailscale and friends)
    ("198.51.100.7", "198.51.100.7"),
    ("8.8.8.8", "8.8.8.8"),
    ("[fd00::5]", "[fd00::5]"),  # ULA
    ("[fec0::1]", "[fec0::1]"),  # site-local, deprecated, private
    ("[::ffff:10.0.0.1]", "[::ffff:a00:1]"),
    ("Node.Example.", "node.example"),
]


def test_the_table_has_at_least_40_forbidden_spellings():
    assert len(LOOPBACK + UNSPECIFIED + LINK_LOCAL) >= 40


@pytest.mark.parametrize("host", LOOPBACK + UNSPECIFIED + LINK_LOCAL + NEVER_CALLABLE)
def test_forbidden_spellings_are_refused_without_dev(host):
    with pytest.raises(BadRequest) as info:
        AddressPolicy(dev=False).normalize(f"https://{host}:8701")
    assert info.value.error_code == "INVALID_CLIENT_ADDRESS"


@pytest.mark.parametrize("host", UNSPECIFIED + LINK_LOCAL + NEVER_CALLABLE)
def test_unspecified_and_link_local_are_refused_even_with_dev(host):
    with pytest.raises(BadRequest):
        AddressPolicy(dev=True).normalize(f"http://{host}:8701")


@pytest.mark.parametrize("host", [h for h in LOOPBACK if "localhost" not in h.lower()])
def test_loopback_spellings_are_allowed_with_dev_in_their_plain_form(host):
    normalized = AddressPolicy(dev=True).normalize(f"http://{host}:8701")
    ip = ipaddress.ip_address(urlsplit(normalized).hostname)  # stored as a plain address
    assert refusal(ip, dev=True) is None
    assert refusal(ip, dev=False) is not None  # …that a production master still refuses


@pytest.mark.parametrize(("host", "normalized"), ACCEPTED)
def test_private_and_public_addresses_are_accepted_in_canonical_form(host, normalized):
    assert AddressPolicy(dev=False).normalize(f"https://{host}:8701") == (
        f"https://{normalized}:8701"
    )


@pytest.mark.parametrize("host", ["127.0.0.1 x", "1.2.3.4.5", "08.1.1.1", "a..b", "node.123"])
def test_hosts_that_are_neither_an_address_nor_a_name_are_refused(host):
    with pytest.raises(BadRequest):
        AddressPolicy(dev=True).normalize(f"https://{host}")


def stub(answers: dict[str, list[str]], log: list[str] | None = None):
    """A resolver for the policy's seam: the names of `answers`, nothing else."""

    async def resolve(host: str, port: int) -> list[str]:
        if log is not None:
            log.append(host)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} unknown to the stub")
        return answers[host]

    return resolve


NAMES = {
    "loop.test": ["127.0.0.1"],
    "loop6.test": ["::1"],
    "metadata.test": ["169.254.169.254"],
    "mixed.test": ["198.51.100.7", "127.0.0.1"],  # one bad answer spoils the name
    "mapped.test": ["::ffff:127.0.0.1"],
    "zero.test": ["0.0.0.0"],
    "fine.test": ["198.51.100.7", "2001:db8::7"],
    "lan.test": ["192.168.1.20"],
}


@pytest.mark.parametrize(
    "name", ["loop.test", "loop6.test", "metadata.test", "mixed.test", "mapped.test", "zero.test"]
)
async def test_a_name_resolving_to_a_forbidden_address_is_refused(name):
    policy = AddressPolicy(dev=False, resolve=stub(NAMES))
    with pytest.raises(BadRequest) as info:
        await policy.check(f"https://{name}:8701")
    assert "resolves to" in info.value.message


async def test_names_resolving_to_private_or_public_addresses_pass():
    policy = AddressPolicy(dev=False, resolve=stub(NAMES))
    assert await policy.check("https://fine.test:8701") == "https://fine.test:8701"
    assert await policy.check("https://LAN.test.") == "https://lan.test"
    assert await policy.vet("fine.test", 8701) == ["198.51.100.7", "2001:db8::7"]


async def test_localhost_names_are_refused_without_asking_the_resolver():
    asked: list[str] = []
    policy = AddressPolicy(dev=False, resolve=stub(NAMES, asked))
    for name in ("localhost", "localhost.", "LocalHost.", "x.localhost", "ip6-loopback"):
        with pytest.raises(BadRequest):
            await policy.check(f"https://{name}:8701")
    assert asked == []


async def test_the_system_resolver_finds_localhost_loopback_and_it_is_refused():
    # `localhost` comes from the OS (nss files), no network: its answers are loopback, so a dev
    # master takes them and a production one refuses the name before asking.
    dev = AddressPolicy(dev=True)
    assert set(await dev.vet("localhost", 80)) <= {"127.0.0.1", "::1"}
    with pytest.raises(AddressRefused):
        await AddressPolicy(dev=False).vet("localhost", 80)


async def test_a_name_that_does_not_resolve_is_refused_at_pairing():
    policy = AddressPolicy(dev=False, resolve=stub(NAMES))
    with pytest.raises(BadRequest) as info:
        await policy.check("https://nowhere.test:8701")
    assert "does not resolve" in info.value.message


async def test_pairing_over_http_refuses_a_name_that_resolves_to_loopback(master):
    master.services.addresses.resolve = stub(NAMES)
    token = await master.pairing_token()
    for name in ("loop.test", "metadata.test", "mixed.test"):
        body = master.pair_body(token, f"https://{name}:8701")
        response = await master.client.post("/v1/auth/pair", json=body)
        assert response.status_code == 400, name
        assert (await response.get_json())["error_code"] == "INVALID_CLIENT_ADDRESS"
    ok = await master.client.post(
        "/v1/auth/pair", json=master.pair_body(token, "https://lan.test:8701")
    )
    assert ok.status_code == 200


class Accepts:
    """A loopback TCP listener that counts connections and closes them."""

    def __init__(self) -> None:
        self.count = 0

    async def __aenter__(self) -> Accepts:
        async def on_connect(reader, writer) -> None:
            self.count += 1
            writer.close()

        self.server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()
        await self.server.wait_closed()


async def test_rebinding_to_loopback_after_pairing_is_refused_before_any_connect(master, clock):
    """The name answered a public address at pairing, loopback at call time (DNS rebinding):
    the call is refused, and the loopback service is never connected to."""
    answers = {"rebind.test": ["198.51.100.7"]}
    master.services.addresses.resolve = stub(answers)
    async with Accepts() as service:
        node = await master.pair(address=f"https://rebind.test:{service.port}")
        answers["rebind.test"] = ["127.0.0.1"]
        s = master.services
        caller = ClientCaller(s.db, s.config, clock, addresses=s.addresses, unsynced_rate=1e6)
        try:
            with pytest.raises(NodeCallError) as info:
                await caller.call(node["node_id"], "GET", "/v1/health")
        finally:
            await caller.close()
        assert info.value.error_code == "NODE_UNREACHABLE"
        assert "loopback" in info.value.message
        assert service.count == 0


async def test_a_literal_address_stored_earlier_is_checked_again_on_every_call(master, clock):
    """A node paired under --dev at 127.0.0.1, called by a master started without it."""
    async with Accepts() as service:
        master.services.addresses.resolve = stub(NAMES)
        node = await master.pair(address="https://lan.test:1")
        async with master.services.db.begin() as conn:
            await conn.execute(
                nodes.update()
                .where(nodes.c.id == node["node_id"])
                .values(client_address=f"https://127.0.0.1:{service.port}")
            )
        s = master.services
        caller = ClientCaller(s.db, s.config, clock, addresses=s.addresses, unsynced_rate=1e6)
        try:
            with pytest.raises(NodeCallError):
                await caller.call(node["node_id"], "GET", "/v1/health")
        finally:
            await caller.close()
        assert service.count == 0


async def test_calls_connect_to_the_checked_answer_not_a_second_lookup(
    dev_master, fake_client, clock
):
    """`pinned.test` exists only in the stub: the call can reach the fake client only through
    the answer the policy checked, and the stub is asked once per new connection."""
    asked: list[str] = []
    port = int(fake_client.address.rsplit(":", 1)[1])
    dev_master.services.addresses.resolve = stub({"pinned.test": ["127.0.0.1"]}, asked)
    node = await dev_master.pair(address=f"http://pinned.test:{port}")
    assert asked == ["pinned.test"]  # the pairing check
    fake_client.valid_access = {"client-access"}
    s = dev_master.services
    caller = ClientCaller(s.db, s.config, clock, addresses=s.addresses, unsynced_rate=1e6)
    try:
        reply = await caller.call(node["node_id"], "GET", "/v1/health")
    finally:
        await caller.close()
    assert reply.status == 200
    assert asked == ["pinned.test", "pinned.test"]
    with pytest.raises(OSError):  # and the OS itself has never heard of it
        await asyncio.get_running_loop().getaddrinfo("pinned.test", port)


async def test_the_data_plane_socket_goes_to_the_checked_address_with_its_host_name():
    hosts: list[str] = []

    async def handler(ws) -> None:
        hosts.append(ws.request.headers["Host"])
        await ws.close()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        policy = AddressPolicy(dev=True, resolve=stub({"ws.test": ["127.0.0.1"]}))
        ws = await connect_pinned(f"ws://ws.test:{port}/v1/ws/stream", policy, open_timeout=5)
        await ws.close()
    assert hosts == [f"ws.test:{port}"]


async def test_the_data_plane_socket_to_a_name_rebound_to_loopback_is_never_opened():
    async with Accepts() as service:
        policy = AddressPolicy(dev=False, resolve=stub({"ws.test": ["127.0.0.1"]}))
        with pytest.raises(AddressRefused):
            await connect_pinned(f"wss://ws.test:{service.port}/v1/ws/stream", policy)
        assert service.count == 0


async def test_a_redirect_from_the_client_is_not_followed(dev_master, clock):
    """A `Location` with a literal IP would skip the pinned resolver: the 3xx comes back as is."""
    async with Accepts() as elsewhere:

        async def redirect(request: web.Request) -> web.Response:
            raise web.HTTPFound(f"http://127.0.0.1:{elsewhere.port}/v1/health")

        app = web.Application()
        app.router.add_get("/v1/health", redirect)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        s = dev_master.services
        caller = ClientCaller(s.db, s.config, clock, addresses=s.addresses, unsynced_rate=1e6)
        try:
            node = await dev_master.pair(address=f"http://127.0.0.1:{port}")
            reply = await caller.call(node["node_id"], "GET", "/v1/health")
        finally:
            await caller.close()
            await runner.cleanup()
        assert reply.status == 302
        assert elsewhere.count == 0


async def test_the_data_plane_socket_does_not_follow_a_redirect_elsewhere():
    async with Accepts() as elsewhere:

        def redirect(connection, request):
            response = connection.respond(HTTPStatus.FOUND, "moved\n")
            response.headers["Location"] = f"ws://127.0.0.1:{elsewhere.port}/v1/ws/stream"
            return response

        async with serve(lambda ws: ws.close(), "127.0.0.1", 0, process_request=redirect) as srv:
            port = srv.sockets[0].getsockname()[1]
            policy = AddressPolicy(dev=True, resolve=stub({"ws.test": ["127.0.0.1"]}))
            with pytest.raises(AddressRefused, match="elsewhere"):
                await connect_pinned(f"ws://ws.test:{port}/v1/ws/stream", policy, open_timeout=5)
        assert elsewhere.count == 0
