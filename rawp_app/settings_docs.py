"""`.env.example` and the settings tables of docs/operations-*.md, generated from the models.

    python -m rawp_app.settings_docs          # print .env.example
    python -m rawp_app.settings_docs --write  # rewrite .env.example and the docs' tables

tests/test_env_example.py checks the files hold exactly what this writes. The models are
named as `"module:Class"` and loaded when the documents are built, as `rawp_app.cli` loads commands
(tests/test_layout.py reads those names as imports: this is why the module lives in `rawp_app/`).

`.env.example` is safe to copy to `.env` as it is, on a host or into a container (issue 17):
every setting is a comment showing its default, so copying it changes nothing — in particular
it cannot override an image's `RAWP_MASTER_HOST=0.0.0.0` or move its state directory. The only
uncommented lines are the secrets to fill in, empty (an empty variable counts as unset).
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from runtime.settings import SettingDoc, settings_of

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Tier:
    key: str  # names the docs table's markers
    title: str  # section heading in .env.example
    model: str  # "module:Class"
    doc: str  # the docs page holding its table

    def settings(self) -> list[SettingDoc]:
        module, _, name = self.model.partition(":")
        return list(settings_of(getattr(importlib.import_module(module), name)))


GATEWAY_PAGE = "operations-gateway"
TIERS = (
    Tier("common", "every command (`rawp …`)", "runtime.cli:CommonOptions", "operations-master"),
    Tier("master", "master (`rawp master`)", "master.settings:MasterSettings", "operations-master"),
    Tier(
        "client",
        "local client (`rawp client`)",
        "client.settings:ClientSettings",
        "operations-client",
    ),
    Tier("gateway", "gateway (`rawp gateway`)", "gateway.settings:GatewaySettings", GATEWAY_PAGE),
    Tier(
        "discord",
        "Discord (docs/discord.md)",
        "adapters.discord.settings:DiscordSettings",
        GATEWAY_PAGE,
    ),
    Tier(
        "slack",
        "Slack (docs/slack.md; app manifest adapters/slack/manifest.yaml)",
        "adapters.slack.settings:SlackSettings",
        GATEWAY_PAGE,
    ),
    Tier(
        "up",
        "rawp up (one process; the variables above it shares are listed once)",
        "rawp_app.up_settings:UpSettings",
        GATEWAY_PAGE,
    ),
)

# Variables no settings model holds: read by a child process or the image, not by a command.
OTHERS = """\
# --- read outside the commands ---
# Seconds the demo agent pauses between steps (so a demo looks like it is thinking).
# RAWP_DEMO_PAUSE=0.05
# Set by the client for each run of a script agent (docs/agents.md); never set these yourself:
# RAWP_PROMPT, RAWP_INPUT_TYPE, RAWP_SESSION_ID, RAWP_AGENT_NAME.
# Docker healthcheck URL; none: the master in the same container (any answer < 500 is healthy).
# RAWP_HEALTHCHECK_URL=http://127.0.0.1:8700/v1/health

# --- compose.yaml (read by compose, not by rawp; docs/operations-docker.md) ---
# PostgreSQL's password, required: any characters (@ % / : # ? + = as `openssl rand -base64 32`
# gives them) but $, written unquoted; the master gets it as RAWP_DATABASE_PASSWORD, escaped.
# RAWP_POSTGRES_PASSWORD=
# The loopback port of this host the master is published on (compose.yaml maps it to 8700).
# RAWP_PUBLISHED_PORT=8700
# The image tag compose runs and builds (`docker build -t rawp .` gives rawp).
# RAWP_IMAGE=rawp
"""

HEADER = """\
# Every variable rawp reads, generated from its settings models: do not edit by hand, run
# `python -m rawp_app.settings_docs --write` (tests/test_env_example.py checks it).
#
# Copy to .env (never commit it) in the directory you run rawp in, or pass it to
# `docker run --env-file`. Flags win over the environment, which wins over .env. Every setting
# below is commented out with its default, so the copy changes nothing until you uncomment a
# line; the empty uncommented lines are the secrets to fill in (empty counts as unset).
"""


def _wrap(text: str) -> list[str]:
    sentence = text[0].upper() + text[1:]
    return textwrap.wrap(
        sentence, width=98, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False
    )


def env_example() -> str:
    out = [HEADER]
    seen: set[str] = set()
    for tier in TIERS:
        out.append(f"\n# --- {tier.title} ---\n")
        for doc in tier.settings():
            if doc.env in seen:
                continue
            seen.add(doc.env)
            accepts = "" if doc.accepts in ("text", "a path") else f" Accepts {doc.accepts}."
            lines = _wrap(f"{doc.help}.{accepts}")
            if doc.secret and not doc.example:  # one to fill in
                lines.append(f"{doc.env}=")
            else:
                lines.append(f"# {doc.env}={doc.default or doc.example or ''}")
            out.append("\n".join(lines) + "\n")
    out.append("\n" + OTHERS)
    return "".join(out)


# --- docs tables ----------------------------------------------------------------------------


def begin(key: str) -> str:
    how = "generated by `python -m rawp_app.settings_docs --write`"
    return f"<!-- BEGIN {key.upper()} SETTINGS ({how}) -->"


def end(key: str) -> str:
    return f"<!-- END {key.upper()} SETTINGS -->"


def _cell(text: str) -> str:
    if text.startswith("`"):  # code: shown as written
        return text.replace("|", "\\|")
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def table(tier: Tier) -> str:
    rows = [
        "| variable | flag | default | accepts | meaning |",
        "|---|---|---|---|---|",
    ]
    for doc in tier.settings():
        flag = f"`{doc.flag}`" if doc.flag else "— (environment only)"
        default = f"`{doc.default}`" if doc.default else "none"
        cells = [f"`{doc.env}`", flag, default, doc.accepts, doc.help]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows)


def with_tables(text: str, tiers: list[Tier]) -> str:
    for tier in tiers:
        head, sep, rest = text.partition(begin(tier.key))
        if not sep:
            raise ValueError(f"no {begin(tier.key)!r} marker")
        _, sep, tail = rest.partition(end(tier.key))
        if not sep:
            raise ValueError(f"no {end(tier.key)!r} marker")
        text = f"{head}{begin(tier.key)}\n{table(tier)}\n{end(tier.key)}{tail}"
    return text


def documents() -> dict[Path, str]:
    """Every generated file → the text it must hold."""
    wanted = {ROOT / ".env.example": env_example()}
    pages: dict[str, list[Tier]] = {}
    for tier in TIERS:
        pages.setdefault(tier.doc, []).append(tier)
    for page, tiers in pages.items():
        path = ROOT / "docs" / f"{page}.md"
        wanted[path] = with_tables(path.read_text(), tiers)
    return wanted


def main(argv: list[str]) -> int:
    if "--write" in argv:
        for path, text in documents().items():
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    print(env_example(), end="")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
