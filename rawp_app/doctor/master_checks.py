"""`rawp doctor`: the master as a gateway and an operator see it, and its database and Redis.

- reachable: `GET /v1/health` answers 200, with the master's version (503: its database is
  down, and the body says so);
- TLS (https only): the certificate verifies against the system's trust store for the URL's
  host, and is not within `EXPIRY_WARNING_DAYS` of its end;
- the edge secret: `POST /v1/edge/auth/token` with `RAWP_EDGE_SECRET` gives a user token (the
  exchange the gateway makes for every chat user, §9.1);
- database and Redis (when `RAWP_DATABASE_URL` / `RAWP_REDIS_URL` are set): a connection and
  `SELECT 1` / `PING`, as the master would make them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from urllib.parse import urlsplit

import aiohttp

from rawp_app.doctor.findings import Finding, bad, cause, good

EXPIRY_WARNING_DAYS = 14
TIMEOUT = aiohttp.ClientTimeout(total=10)
START_MASTER = (
    "start the master (`rawp master`, or `docker start rawp-master`) or set RAWP_MASTER_URL "
    "(--master-url) to where it listens"
)


async def check_master(master_url: str, edge_secret: str) -> list[Finding]:
    base = master_url.rstrip("/")
    findings: list[Finding] = []
    async with aiohttp.ClientSession(timeout=TIMEOUT) as http:
        try:
            async with http.get(base + "/v1/health") as response:
                status, body = response.status, await _json(response)
        except (aiohttp.ClientError, TimeoutError) as exc:
            if isinstance(exc, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError):
                return [await _tls_finding(base)]
            return [bad(f"master {base} did not answer ({cause(exc)})", START_MASTER)]
        if status != 200:
            detail = body.get("message") if isinstance(body, dict) else None
            return [
                bad(
                    f"master {base} answered HTTP {status}: {detail or 'not healthy'}",
                    "read the master's log; a 503 DATABASE_UNAVAILABLE means its database "
                    "(RAWP_DATABASE_URL) does not answer",
                )
            ]
        version = body.get("version", "an unknown version") if isinstance(body, dict) else "?"
        findings.append(good(f"master {base} answers: rawp {version}"))
        if urlsplit(base).scheme == "https":
            findings.append(await _tls_finding(base))
        findings.append(await _edge_secret(http, base, edge_secret))
    return findings


async def _edge_secret(http: aiohttp.ClientSession, base: str, secret: str) -> Finding:
    if not secret:
        return bad(
            "RAWP_EDGE_SECRET is not set",
            "set RAWP_EDGE_SECRET to the value the master was started with",
        )
    try:
        async with http.post(
            base + "/v1/edge/auth/token",
            json={"subject": "console:rawp-doctor"},
            headers={"Authorization": f"Bearer {secret}"},
        ) as response:
            status, body = response.status, await _json(response)
    except (aiohttp.ClientError, TimeoutError) as exc:
        return bad(f"the edge token exchange did not answer ({cause(exc)})", START_MASTER)
    if status == 200:
        return good("the master accepts RAWP_EDGE_SECRET (edge user tokens are issued)")
    code = body.get("error_code") if isinstance(body, dict) else None
    return bad(
        f"the master refused RAWP_EDGE_SECRET (HTTP {status}{' ' + code if code else ''})",
        "give the gateway the same RAWP_EDGE_SECRET as the master (and the master a non-empty "
        "one: an empty secret turns the exchange off)",
    )


async def _tls_finding(base: str) -> Finding:
    parts = urlsplit(base)
    host, port = parts.hostname or "", parts.port or 443
    context = ssl.create_default_context()
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=context, server_hostname=host), 10
        )
    except ssl.SSLCertVerificationError as exc:
        return bad(
            f"TLS certificate of {host}:{port} does not verify ({exc.verify_message})",
            "serve a certificate for this host name from a trusted CA with its full chain "
            "(RAWP_MASTER_TLS_CERT, or the proxy in front of the master)",
        )
    except (OSError, TimeoutError) as exc:
        return bad(f"TLS handshake with {host}:{port} failed ({cause(exc)})", START_MASTER)
    try:
        peer = writer.get_extra_info("peercert") or {}
    finally:
        writer.close()
    ends = dt.datetime.fromtimestamp(ssl.cert_time_to_seconds(peer["notAfter"]), dt.UTC)
    days = (ends - dt.datetime.now(dt.UTC)).days
    if days < EXPIRY_WARNING_DAYS:
        return bad(
            f"TLS certificate of {host}:{port} expires in {days} days ({ends:%Y-%m-%d})",
            "renew the certificate and restart the master (or reload the proxy)",
        )
    return good(f"TLS certificate of {host}:{port} verifies, valid {days} more days")


async def check_database(url: str) -> Finding:
    from sqlalchemy import text
    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    shown = make_url(url).render_as_string(hide_password=True)
    try:
        engine = create_async_engine(url)
    except Exception as exc:  # a malformed URL or a driver that is not installed
        return bad(f"RAWP_DATABASE_URL {shown} cannot be used ({cause(exc)})", _DB_FIX)
    try:
        async with asyncio.timeout(10), engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:  # every driver has its own errors; each is one line here
        return bad(f"database {shown} does not answer ({cause(exc)})", _DB_FIX)
    finally:
        await engine.dispose()
    return good(f"database {shown} answers")


_DB_FIX = (
    "start the database, or correct RAWP_DATABASE_URL "
    "(postgresql+asyncpg://user:password@host:5432/rawp)"
)


async def check_redis(url: str) -> Finding:
    import redis.asyncio as redis

    shown = _without_password(url)
    client = redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    try:
        await client.ping()
    except Exception as exc:  # connection, auth and protocol errors alike
        return bad(
            f"Redis {shown} does not answer ({cause(exc)})",
            "start Redis, or correct RAWP_REDIS_URL (redis://host:6379/0)",
        )
    finally:
        await client.aclose()
    return good(f"Redis {shown} answers")


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")).geturl()


async def _json(response: aiohttp.ClientResponse):
    try:
        return await response.json(content_type=None)
    except ValueError:
        return None
