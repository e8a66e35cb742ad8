"""`rawp doctor`: the chat platforms, asked at the endpoints the gateway is configured with
(`DISCORD_API_BASE_URL`, `SLACK_API_BASE_URL`), so a proxy, GovSlack or a test's fake is what
gets checked.

Discord (docs/discord.md): the bot token is accepted (`GET /users/@me`); the application has
the Message Content intent switched on — and Server Members when `DISCORD_APPROVER_ROLES` needs
it (`GET /oauth2/applications/@me` flags; privileged intents the portal has not enabled make
the gateway close the bot's connection with 4014); the `/rawp` command is registered
(`GET /applications/{id}/commands`; `rawp gateway` registers it when it starts).

Slack (docs/slack.md): `auth.test` accepts the bot token and its `x-oauth-scopes` hold every
scope of the app manifest; in Socket Mode `apps.connections.open` accepts the app token, in HTTP
mode a signing secret is set.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from rawp_app.doctor.findings import Finding, bad, cause, good

TIMEOUT = aiohttp.ClientTimeout(total=10)
PUBLIC_DISCORD_API = "https://discord.com/api/v10"
PUBLIC_SLACK_API = "https://slack.com/api/"
# Application flags (Discord docs, Application object): either bit means the intent is on.
MESSAGE_CONTENT = (1 << 18, 1 << 19)
GUILD_MEMBERS = (1 << 14, 1 << 15)
# The bot scopes of adapters/slack/manifest.yaml (tests/adapters/test_doctor.py keeps them equal).
MANIFEST_SCOPES = (
    "chat:write", "commands", "reactions:write", "channels:history", "groups:history",
    "app_mentions:read", "im:history", "files:read", "files:write", "usergroups:read",
    "assistant:write",
)  # fmt: skip
PORTAL = "the Developer Portal → your application → Bot"


async def check_discord(env: Mapping[str, str]) -> list[Finding]:
    token = env.get("DISCORD_BOT_TOKEN", "")
    base = (env.get("DISCORD_API_BASE_URL") or PUBLIC_DISCORD_API).rstrip("/")
    headers = {"Authorization": f"Bot {token}"}
    async with aiohttp.ClientSession(timeout=TIMEOUT, headers=headers) as http:
        try:
            status, me = await _get(http, base + "/users/@me")
            if status == 401:
                return [
                    bad(
                        f"Discord ({base}) refused DISCORD_BOT_TOKEN (401 Unauthorized)",
                        f"copy the bot token again from {PORTAL} → Reset Token into "
                        "DISCORD_BOT_TOKEN",
                    )
                ]
            if status != 200:
                return [bad(f"Discord ({base}) answered HTTP {status} to /users/@me", _REACH)]
            name = me.get("username", "?") if isinstance(me, dict) else "?"
            findings = [good(f"Discord accepts the bot token: {name}")]
            status, app = await _get(http, base + "/oauth2/applications/@me")
            if status != 200 or not isinstance(app, dict) or "id" not in app:
                return [*findings, bad(f"Discord answered HTTP {status} for the app", _REACH)]
            findings.append(_intents(int(app.get("flags") or 0), env))
            status, commands = await _get(http, f"{base}/applications/{app['id']}/commands")
        except (aiohttp.ClientError, TimeoutError) as exc:
            return [bad(f"Discord ({base}) did not answer ({cause(exc)})", _REACH)]
    names = {c.get("name") for c in commands} if isinstance(commands, list) else set()
    if status == 200 and "rawp" in names:
        findings.append(good("the /rawp command is registered"))
    else:
        findings.append(
            bad(
                "the /rawp command is not registered",
                "start `rawp gateway` once with this token (it registers the command as it "
                "starts); a new global command can take a while to show in Discord",
            )
        )
    return findings


_REACH = "check DISCORD_API_BASE_URL and that this host reaches it over HTTPS"


def _intents(flags: int, env: Mapping[str, str]) -> Finding:
    missing = []
    if not any(flags & bit for bit in MESSAGE_CONTENT):
        missing.append("Message Content")
    if env.get("DISCORD_APPROVER_ROLES") and not any(flags & bit for bit in GUILD_MEMBERS):
        missing.append("Server Members (DISCORD_APPROVER_ROLES needs it)")
    if missing:
        return bad(
            f"privileged intents off: {', '.join(missing)}",
            f"switch them on in {PORTAL} → Privileged Gateway Intents",
        )
    return good("the needed privileged intents are on")


async def check_slack(env: Mapping[str, str]) -> list[Finding]:
    base = env.get("SLACK_API_BASE_URL") or PUBLIC_SLACK_API
    base = base if base.endswith("/") else base + "/"
    async with aiohttp.ClientSession(timeout=TIMEOUT) as http:
        try:
            answer, scopes = await _slack(http, base, "auth.test", env.get("SLACK_BOT_TOKEN", ""))
            if not answer.get("ok"):
                return [
                    bad(
                        f"Slack ({base}) refused SLACK_BOT_TOKEN ({answer.get('error')})",
                        "copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & "
                        "Permissions page into SLACK_BOT_TOKEN",
                    )
                ]
            findings = [good(f"Slack accepts the bot token: {answer.get('team', '?')}")]
            findings.append(_scopes(scopes))
            if (env.get("SLACK_MODE") or "socket") == "socket":
                findings.append(await _app_token(http, base, env.get("SLACK_APP_TOKEN", "")))
            elif not env.get("SLACK_SIGNING_SECRET"):
                findings.append(
                    bad(
                        "SLACK_MODE=http without SLACK_SIGNING_SECRET",
                        "copy the Signing Secret from the app's Basic Information page",
                    )
                )
        except (aiohttp.ClientError, TimeoutError) as exc:
            return [
                bad(
                    f"Slack ({base}) did not answer ({cause(exc)})",
                    "check SLACK_API_BASE_URL and that this host reaches it over HTTPS",
                )
            ]
    return findings


def _scopes(granted: str | None) -> Finding:
    if granted is None:
        return bad(
            "Slack did not report the token's scopes (no x-oauth-scopes header)",
            "check SLACK_API_BASE_URL points at the Slack Web API",
        )
    have = {s.strip() for s in granted.split(",")}
    missing = [s for s in MANIFEST_SCOPES if s not in have]
    if missing:
        return bad(
            f"the bot token lacks scopes: {', '.join(missing)}",
            "add them (adapters/slack/manifest.yaml lists all) and reinstall the app",
        )
    return good("the bot token has every scope the manifest asks for")


async def _app_token(http: aiohttp.ClientSession, base: str, token: str) -> Finding:
    if not token:
        return bad("Socket Mode without SLACK_APP_TOKEN", _APP_TOKEN_FIX)
    answer, _ = await _slack(http, base, "apps.connections.open", token)
    if not answer.get("ok"):
        return bad(f"Slack refused SLACK_APP_TOKEN ({answer.get('error')})", _APP_TOKEN_FIX)
    return good("Slack accepts the app token (Socket Mode)")


_APP_TOKEN_FIX = (
    "create an app-level token with connections:write (Basic Information → App-Level Tokens) "
    "and set SLACK_APP_TOKEN (xapp-…)"
)


async def _slack(http: aiohttp.ClientSession, base: str, method: str, token: str):
    async with http.post(base + method, headers={"Authorization": f"Bearer {token}"}) as answer:
        try:
            body = await answer.json(content_type=None)
        except ValueError:  # not the Web API (a proxy's error page): no "ok", said as such
            body = {"error": f"HTTP {answer.status}, not a Slack Web API answer"}
        return (body if isinstance(body, dict) else {}), answer.headers.get("x-oauth-scopes")


async def _get(http: aiohttp.ClientSession, url: str):
    async with http.get(url) as response:
        try:
            return response.status, await response.json(content_type=None)
        except ValueError:
            return response.status, None
