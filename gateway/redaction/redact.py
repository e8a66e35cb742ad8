"""Redaction before chat (issue 15 §3): credentials in text bound for a chat platform become
`[redacted: kind]`.

Rules:

1. Known credential formats are found by `detect-secrets`' plugin patterns (its
   `RegexBasedDetector.denylist`s: AWS access key ids, GitHub, GitLab, Slack webhooks, Stripe,
   SendGrid, npm, PyPI, Twilio, Azure storage keys, URLs with a password, …), imported, not
   copied, so their upkeep is theirs. Where a plugin misses a current format (`_OWN` says
   which and why: AWS secret keys unquoted as `printenv` prints them, whole PEM blocks, JWTs
   with their signature, today's Slack/Discord/OpenAI/Anthropic/GCP/Azure formats, connection
   strings, `Authorization:` headers), a pattern of ours is added beside it.
2. One Hyperscan pass names the patterns that may match (gateway.redaction.redact_gate); those run
   with `re.finditer` (ASCII classes, as the gate sees them), and overlapping finds merge
   into one redaction named after the first. A pattern with a group redacts that group only
   (the password of a URL, the key after `AWS_SECRET_ACCESS_KEY=`), so the reader still sees
   what was there. A find that ends inside a run of token characters (a fixed-length
   pattern inside a longer token: Telegram's 8–10 digits, `:` and 35 characters can start in an AWS
   key id and stop inside the secret after it) takes the rest of the run, so no piece of a
   secret is left glued to its marker.
3. The values of the workspace's `.env` (known to the gateway only as fingerprints, see
   rawp.fingerprints) are redacted wherever they occur, as `[redacted: .env value]`.
4. Redaction happens to text before it is chunked (a secret is never cut in two by a message
   boundary), and at the platform seam (`RedactingPlatform`) to every other text that
   leaves — status lines, approval prompts, hidden thinking, notes. It is idempotent: a
   redacted text contains nothing to redact.
5. Only text bound for a chat is redacted: frames, the agent's own reads and the master's
   relay are unchanged (the agent needs the real values to work).
6. A high-entropy token written next to a credential — after an AWS access key id, or after
   a word such as `password`, `secret`, `token` — is taken as part of it and redacted with it
   (gateway.redaction.redact_nearby, issue 28 §4): "key id AKIA… with secret q8Vb…" loses both.
"""

from __future__ import annotations

import functools
import logging
import re
import string
from dataclasses import dataclass

from detect_secrets.plugins import (
    aws,
    azure_storage_key,
    basic_auth,
    github_token,
    gitlab_token,
    mailchimp,
    npm,
    pypi_token,
    sendgrid,
    slack,
    square_oauth,
    stripe,
    telegram_token,
    twilio,
)

from gateway.redaction.redact_gate import Gate, tokens_of_lengths
from gateway.redaction.redact_nearby import nearby_secrets
from rawp.events import SecretFingerprints
from rawp.fingerprints import acceptable, candidates, fingerprint, padded_runs

log = logging.getLogger(__name__)

ENV_KIND = ".env value"


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0  # 0 redacts the whole match


def _plugin(kind: str, detector: type, group: int = 0) -> list[Rule]:
    """The patterns of one detect-secrets plugin (rule 1)."""
    return [
        Rule(kind, re.compile(pattern.pattern, (pattern.flags & ~re.UNICODE) | re.ASCII), group)
        for pattern in detector.denylist
    ]


def _own(kind: str, pattern: str, group: int = 0) -> Rule:
    return Rule(kind, re.compile(pattern, re.ASCII), group)


_B64 = r"[A-Za-z0-9+/]"
_URLSAFE = r"[A-Za-z0-9_-]"

# Rule 1: ours, each where a plugin misses a format. On an overlap the earlier rule names it.
_OWN = [
    # PEM/OpenSSH/PGP blocks whole: the plugin finds only the BEGIN line, which leaves the key.
    # A block with no END (cut off) loses its base64 lines, or the rest of a JSON string.
    _own(
        "private key",
        r"-----BEGIN[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,16384}?-----END[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:(?:\\n|\s)*[A-Za-z0-9+/=:, -]{16,})*)",
    ),
    _own("private key", r"PuTTY-User-Key-File-\d:[\s\S]{0,16384}?Private-MAC: ?[0-9a-fA-F]+"),
    _own("Anthropic key", rf"\bsk-ant-[a-z]{{2,8}}\d\d-{_URLSAFE}{{32,}}"),
    # OpenAI: project, service-account and admin keys, and the classic 48-character form
    # (the plugin knows only the old `T3BlbkFJ` one).
    _own("OpenAI key", rf"\bsk-(?:proj-|svcacct-|admin-|None-)?{_URLSAFE}{{40,}}"),
    _own("OpenAI key", r"\bsk-[A-Za-z0-9]{48}\b"),
    # Printed unquoted by `printenv`/`env`/`cat .env`; the plugin wants quotes around it.
    _own(
        "AWS secret key",
        r"(?i:aws)[A-Za-z0-9_.-]{0,30}(?i:secret|key|token)[A-Za-z0-9_.-]{0,20}"
        rf"[\"']?\s*[:=]\s*[\"']?({_B64}{{40}})(?!{_B64})",
        group=1,
    ),
    _own(
        "AWS session token",
        r"(?i:aws_session_token)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9+/=]{100,})",
        group=1,
    ),
    _own("GCP API key", rf"\bAIza{_URLSAFE}{{35}}"),
    _own("GCP OAuth secret", rf"\bGOCSPX-{_URLSAFE}{{28}}"),
    _own("GCP access token", rf"\bya29\.{_URLSAFE}{{20,}}"),
    _own("Azure client secret", r"\b[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"),
    _own("Azure SAS signature", r"[?&]sig=([A-Za-z0-9%+/=]{30,})", group=1),
    _own("Azure key", r"(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/=]{40,})", group=1),
    _own("GitHub token", r"\bgithub_pat_[A-Za-z0-9_]{60,}"),
    # Slack: today's tokens hold capitals, which the plugin's `[a-z0-9]+` stops at.
    _own("Slack token", r"\bxox[abposre]-(?:[0-9]+-)*[A-Za-z0-9-]{10,}"),
    _own("Slack token", r"\bxapp-\d-[A-Z0-9]+-\d+-[a-f0-9]+"),
    # Discord: the last part is 27 characters in old tokens, up to 38 in new ones.
    _own("Discord token", rf"\b[MNO]{_URLSAFE}{{23,25}}\.{_URLSAFE}{{6}}\.{_URLSAFE}{{27,38}}"),
    _own("Discord webhook", r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]+"),
    # Stripe: live and test secret/restricted keys of any length, webhook secrets.
    _own("Stripe key", r"\b(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{24,}"),
    _own("Stripe key", r"\bwhsec_[0-9a-zA-Z]{24,}"),
    # JWTs with their signature (the plugin's lazy tail stops before it).
    _own("JWT", rf"\beyJ{_URLSAFE}{{8,}}\.eyJ{_URLSAFE}{{8,}}\.{_URLSAFE}*"),
    # `Authorization: Basic …` / `Bearer …` headers, as curl -v and stack traces print them.
    _own(
        "authorization header",
        r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:basic|bearer|token)\s+"
        r"([A-Za-z0-9._~+/=-]{8,})",
        group=1,
    ),
    # Connection strings (ADO, JDBC, ODBC): `…;Password=…;`. A `;` before it keeps a keyword
    # argument in code (`connect(password=pw)`) out; a `[` first is our own marker.
    _own(
        "connection string password",
        r"(?i)(?:^|;)\s*(?:password|pwd)\s*=\s*([^;'\"\s\[][^;'\"\s]*)",
        group=1,
    ),
]

_PLUGINS = [
    *_plugin("AWS access key", aws.AWSKeyDetector),
    *_plugin("Azure storage key", azure_storage_key.AzureStorageKeyDetector),
    *_plugin("URL password", basic_auth.BasicAuthDetector, group=1),
    *_plugin("GitHub token", github_token.GitHubTokenDetector),
    *_plugin("GitLab token", gitlab_token.GitLabTokenDetector),
    *_plugin("Slack token", slack.SlackDetector),
    *_plugin("Stripe key", stripe.StripeDetector),
    *_plugin("SendGrid key", sendgrid.SendGridDetector),
    *_plugin("Mailchimp key", mailchimp.MailchimpDetector),
    *_plugin("npm token", npm.NpmDetector),
    *_plugin("PyPI token", pypi_token.PypiTokenDetector),
    *_plugin("Square secret", square_oauth.SquareOAuthDetector),
    *_plugin("Telegram token", telegram_token.TelegramBotTokenDetector),
    *_plugin("Twilio key", twilio.TwilioKeyDetector),
]

RULES: tuple[Rule, ...] = (*_OWN, *_PLUGINS)


@functools.cache
def _gate() -> Gate:
    return Gate([rule.pattern for rule in RULES])


def prepare() -> None:
    """Compile the gates now (about a second), not at the first message."""
    _gate()
    nearby_secrets("")


def marker(kind: str) -> str:
    return f"[redacted: {kind}]"


class Redactor:
    """Redacts one session's outgoing text: known formats, and its `.env` values once the
    client's fingerprints are known (`use_fingerprints`)."""

    def __init__(self) -> None:
        self._rules = RULES
        self._salt: str | None = None
        self._lengths: frozenset[int] = frozenset()
        self._hashes: frozenset[str] = frozenset()

    def use_fingerprints(self, found: SecretFingerprints | None) -> None:
        """Take the `.env` fingerprints of the session's latest `session.capabilities`."""
        if found is None or not found.hashes:
            self._salt, self._lengths, self._hashes = None, frozenset(), frozenset()
            return
        if not acceptable(found.salt, found.lengths, found.hashes):
            log.warning("ignoring .env fingerprints outside the bounds (rawp.fingerprints)")
            self._salt, self._lengths, self._hashes = None, frozenset(), frozenset()
            return
        self._salt = found.salt
        self._lengths = frozenset(found.lengths)
        self._hashes = frozenset(found.hashes)
        tokens_of_lengths(b" ", self._lengths)  # compiles its scanner now, not at a message

    def redact(self, text: str) -> str:
        if not text:
            return text
        text = self._formats(text)
        if self._salt is not None:
            text = self._env_values(text)
        # Rule 6 last: a `.env` value beside a `password` word keeps its own name, and the key
        # id's marker still anchors the secret after it.
        return _replace(text, list(nearby_secrets(text)))

    def _formats(self, text: str) -> str:
        spans: list[tuple[int, int, str]] = []
        for index in _gate().candidates(text):
            rule = self._rules[index]
            for match in rule.pattern.finditer(text):
                start, end = match.span(rule.group)
                if end > start:
                    spans.append((start, end, rule.kind))
        return _replace(text, spans)

    def _env_values(self, text: str) -> str:
        salt, hashes = self._salt or "", self._hashes
        tokens = tokens_of_lengths(padded_runs(text), self._lengths)
        if tokens is None:
            tokens = candidates(text, self._lengths)
        found = {c for c in tokens if fingerprint(c, salt) in hashes}
        # Longest first, so a value that holds a shorter one is replaced whole.
        for value in sorted(found, key=len, reverse=True):
            text = text.replace(value.decode("utf-8", "surrogatepass"), marker(ENV_KIND))
        return text


def _replace(text: str, spans: list[tuple[int, int, str]]) -> str:
    """Each span `(start, end, kind)` of `text` replaced by its marker; overlapping spans
    merge into one, named after the first (rule 2)."""
    if not spans:
        return text
    spans.sort(key=lambda span: (span[0], -span[1]))
    out, at = [], 0
    for start, end, kind in spans:
        if start < at:  # rule 2: overlaps the previous find, which already covers it
            at = _past_glued(text, max(at, end))
            continue
        out.append(text[at:start])
        out.append(marker(kind))
        at = _past_glued(text, end)
    out.append(text[at:])
    return "".join(out)


_GLUE = frozenset(string.ascii_letters + string.digits + "+/=_~-")


def _past_glued(text: str, end: int) -> int:
    """Rule 2: a find that stops inside a run of token characters takes the rest of the run."""
    if end == 0 or text[end - 1] not in _GLUE:
        return end
    while end < len(text) and text[end] in _GLUE:
        end += 1
    return end
