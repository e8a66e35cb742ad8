"""The redactor (gateway.redaction.redact, issue 15 §3): every known format is found wherever it
sits (prose, code fences, diffs, JSON, URLs), nothing in a fixed corpus of ordinary code and prose
is touched, `.env` values are found by their fingerprints alone, and redacting twice changes
nothing."""

from __future__ import annotations

import json
import random
import sysconfig
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gateway.redaction.redact import Redactor, marker
from gateway.redaction.redact_gate import tokens_of_lengths
from gateway.redaction.redact_nearby import AWS_ID_MARKER, high_entropy
from rawp.events import SecretFingerprints
from rawp.fingerprints import (
    MAX_LENGTHS,
    MIN_LENGTH,
    candidates,
    fingerprints,
    new_salt,
    padded_runs,
)

ROOT = Path(__file__).resolve().parents[2]

# (kind, secret, the part that must vanish): made-up values in each format's shape.
PEM_BODY = "MIIEpAIBAAKCAQEAz8Xq3Lw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3Oy7Tr1Ex"
SAMPLES = [
    ("AWS access key", "AKIAZ7Q3N5V2KX4TRW8M", "AKIAZ7Q3N5V2KX4TRW8M"),
    ("AWS access key", "ASIAY3TQ7W2MN5KXR4PB", "ASIAY3TQ7W2MN5KXR4PB"),
    (
        "AWS secret key",
        "AWS_SECRET_ACCESS_KEY=q8Vb2+Lw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9W",
        "q8Vb2+Lw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9W",
    ),
    (
        "AWS secret key",
        "aws_secret_access_key = q8Vb2/Lw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9W",
        "q8Vb2/Lw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9W",
    ),
    (
        "GitHub token",
        "ghp_Q7wE9rT2yU4iO6pA8sD0fG1hJ3kL5zX7cV9b",
        "ghp_Q7wE9rT2yU4iO6pA8sD0fG1hJ3kL5zX7cV9b",
    ),
    (
        "GitHub token",
        "github_pat_11ABCDE2F0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01",
        "github_pat_11ABCDE2F0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01",
    ),
    ("GitLab token", "glpat-Zr8Vq2Lm5Nx7Tb1Kc4Wd", "glpat-Zr8Vq2Lm5Nx7Tb1Kc4Wd"),
    (
        "Slack token",
        "xoxb-2401234567-5012345678901-Zq8VbLw9Yk2Vb7Nc1Rt5Hs0J",
        "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0J",
    ),
    (
        "Slack token",
        "https://hooks.slack.com/services/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",
        "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0J",
    ),
    (
        "Discord token",
        "MTA5NzY1NDMyMTA5ODc2NTQzMg.GhJkLm.Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2",
        "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2",
    ),
    ("Stripe key", "sk_live_51Hq8VbLw9Yk2Vb7Nc1Rt5Hs0J", "51Hq8VbLw9Yk2Vb7Nc1Rt5Hs0J"),
    ("Stripe key", "rk_test_51Hq8VbLw9Yk2Vb7Nc1Rt5Hs0J", "51Hq8VbLw9Yk2Vb7Nc1Rt5Hs0J"),
    (
        "OpenAI key",
        "sk-proj-Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3Oy7Tr1Ex",
        "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3Oy7Tr1Ex",
    ),
    (
        "Anthropic key",
        "sk-ant-api03-Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3Oy7Tr1Ex-Aa",
        "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3Oy7Tr1Ex",
    ),
    ("GCP API key", "AIzaSyZq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Q", "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8"),
    ("GCP OAuth secret", "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6", "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6"),
    (
        "Azure storage key",
        "AccountKey=" + "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3Oy7Tr1Ex" * 2 + "Zq8V==",
        "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3Oy7Tr1Ex",
    ),
    (
        "JWT",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3",
        "Zq8VbLw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3",
    ),
    ("URL password", "postgres://app:Zq8VbLw9Yk2@db.internal:5432/main", "Zq8VbLw9Yk2"),
    (
        "authorization header",
        "Authorization: Basic YWxpY2U6WnE4VmJMdzlZazI=",
        "YWxpY2U6WnE4VmJMdzlZazI=",
    ),
    ("authorization header", "authorization: Bearer Zq8VbLw9Yk2Vb7Nc1Rt5", "Zq8VbLw9Yk2Vb7Nc1Rt5"),
    (
        "connection string password",
        "Server=db;Database=main;User Id=app;Password=Zq8VbLw9Yk2;",
        "Zq8VbLw9Yk2",
    ),
    (
        "private key",
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY[::-1]}\n"
        "-----END RSA PRIVATE KEY-----",
        PEM_BODY[::-1],
    ),
    (
        "private key",
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----",
        PEM_BODY,
    ),
]

# Issue 28 §4: secrets with no format of their own, found beside a credential.
AWS_SECRET = "q8Vb2+Lw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9W"
SAMPLES += [
    (
        "AWS secret key",
        f"AWS key id AKIAZ7Q3N5V2KX4TRW8M with secret {AWS_SECRET}",
        AWS_SECRET,
    ),
    ("AWS secret key", f"AKIAZ7Q3N5V2KX4TRW8M / {AWS_SECRET}", AWS_SECRET),
    ("secret", "the password is Zq8VbLw9Yk2Vb7Nc1Rt5", "Zq8VbLw9Yk2Vb7Nc1Rt5"),
    ("secret", "client_secret: 'Xk3mP9qL2vN8rT5wZ1bY'", "Xk3mP9qL2vN8rT5wZ1bY"),
    ("secret", "API token for it: 9fQ2xL7mZ0pR4tW8yB1nC6", "9fQ2xL7mZ0pR4tW8yB1nC6"),
]

# Where a secret may sit: each wraps `s` in the text around it.
PLACES = {
    "prose": lambda s: f"The value is {s} as printed.",
    "alone": lambda s: s,
    "fence": lambda s: f"```\n$ printenv\n{s}\nHOME=/home/alice\n```",
    "diff": lambda s: "--- a/.env\n+++ b/.env\n@@ -1 +1,2 @@\n-OLD=1\n+" + s + "\n",
    "json": lambda s: json.dumps({"ok": False, "config": {"value": s, "n": 3}}),
    "json escaped": lambda s: json.dumps({"log": json.dumps({"secret": s})}),
    "stack trace": lambda s: f'  File "app.py", line 3, in <module>\nValueError: bad {s}\n',
}

redactor = Redactor()


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize(("kind", "secret", "hidden"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_each_format_is_found_wherever_it_sits(kind, secret, hidden, place):
    text = PLACES[place](secret)
    out = redactor.redact(text)
    assert hidden not in out
    assert marker(kind) in out
    assert redactor.redact(out) == out  # idempotent: a marker has nothing to redact


FILLER = st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF, exclude_characters="\\"),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(
    sample=st.sampled_from(SAMPLES),
    place=st.sampled_from(sorted(PLACES)),
    before=FILLER,
    after=FILLER,
    separator=st.sampled_from([" ", "\n", "\t", "\n\n", " (", ": ", "\r\n"]),
)
def test_a_secret_inside_any_text_is_gone(sample, place, before, after, separator):
    _, secret, hidden = sample
    text = before + separator + PLACES[place](secret) + separator.replace("(", ")") + after
    assert hidden not in redactor.redact(text)


# --- secrets beside a credential (issue 28 §4) -----------------------------------------------

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
# How an answer writes a secret next to what it belongs to; {i}: the key id, {s}: the secret.
BESIDE = [
    ("AWS secret key", "AWS key id {i} with secret {s}"),
    ("AWS secret key", "access key {i}, secret key {s}"),
    ("AWS secret key", "{i}:{s}"),
    ("AWS secret key", "| {i} | {s} |"),
    ("AWS secret key", '{{"AccessKeyId": "{i}", "SecretAccessKey": "{s}"}}'),
    ("secret", "Your new password: {s}"),
    ("secret", "the token is {s} (valid for an hour)"),
    ("secret", "SECRET={s}"),
    ("secret", "api_key = '{s}'"),
    ("secret", "Credentials\n  {s}"),
]


@settings(max_examples=300, deadline=None)
@given(
    beside=st.sampled_from(BESIDE),
    place=st.sampled_from(sorted(PLACES)),
    key_id=st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16),
    seed=st.integers(min_value=0, max_value=2**32),
    length=st.sampled_from([20, 32, 40, 64]),
    before=FILLER,
    after=FILLER,
)
def test_a_random_secret_beside_a_credential_is_gone(
    beside, place, key_id, seed, length, before, after
):
    kind, template = beside
    secret = random_secret(random.Random(seed), length)
    # About 1 in 200 random tokens looks like words (rule 3, measured below): not this test's.
    assume(high_entropy(secret))
    written = template.format(i="AKIA" + key_id, s=secret)
    text = before + "\n" + PLACES[place](written) + "\n" + after
    out = redactor.redact(text)
    assert not [secret[i : i + 6] for i in range(length - 5) if secret[i : i + 6] in out]
    # Named as the credential it stands beside, unless a format rule's find overlapped it
    # first (rule 2: the merged redaction keeps the first name).
    assert marker(kind) in out or marker(kind) not in redactor.redact(written)
    assert redactor.redact(out) == out


def random_secret(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(B64) for _ in range(length))


@pytest.mark.parametrize(("length", "share"), [(16, 0.97), (20, 0.98), (40, 0.998)])
def test_random_tokens_pass_the_entropy_rule(length, share):
    rng = random.Random(28)  # fixed: the same 20,000 tokens on every run
    passed = sum(high_entropy(random_secret(rng, length)) for _ in range(20_000))
    assert passed >= share * 20_000


NAMES_BESIDE_WORDS = [
    "the token is stored in redis_cache_v2 for now",
    "password hashing uses bcrypt with 12 rounds",
    "POST /v1/edge/auth/token returns an access_token and expires_in",
    "token = OAuth2ClientCredentials(client_id, client_secret)",
    "the tokenizer splits 3f2a9c41b7d0e8f6a5c3 into pieces",
    "secret scanning: see tests/gateway/test_redact.py",
    "The API key is read from RAWP_EDGE_SECRET at start.",
    "token budget: 200000 tokens per session",
    "password\n\nZq8VbLw9Yk2Vb7Nc1Rt5 is in the next paragraph",
]


def test_the_key_ids_marker_is_the_one_the_format_rules_write():
    assert marker("AWS access key") == AWS_ID_MARKER


@pytest.mark.parametrize("text", NAMES_BESIDE_WORDS)
def test_names_and_numbers_beside_the_words_are_left_alone(text):
    assert redactor.redact(text) == text


@settings(max_examples=300, deadline=None)
@given(
    alphabet=st.text(B64, min_size=2, max_size=7),
    length=st.integers(min_value=16, max_value=64),
    before=FILLER,
)
def test_a_low_entropy_run_beside_a_word_is_left_alone(alphabet, length, before):
    # At most 7 distinct characters: under 3 bits each, below the entropy rule's bar.
    run = (alphabet * length)[:length]
    text = f"{before}\npassword: {run}\n"
    assert redactor.redact(text) == text


def _corpus() -> list[Path]:
    """Ordinary code and prose, fixed: this project's own modules and pages (not the
    redactor's, which spell the formats), and some of Python's standard library."""
    ours = [
        *sorted((ROOT / "gateway").glob("*.py")),
        *sorted((ROOT / "rawp").glob("*.py")),
        *sorted((ROOT / "client").glob("*.py")),
        *(ROOT / "docs" / name for name in ("gateway.md", "protocol.md", "agents.md")),
        ROOT / "README.md",
    ]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    theirs = [
        stdlib / name
        for name in (
            "asyncio/base_events.py",
            "json/decoder.py",
            "http/client.py",
            "urllib/parse.py",
            "argparse.py",
            "textwrap.py",
            "difflib.py",
            "email/utils.py",
        )
    ]
    return [p for p in ours + theirs if p.exists() and not p.name.startswith("redact")]


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.name)
def test_ordinary_code_and_prose_are_left_alone(path):
    text = path.read_text()
    out = redactor.redact(text)
    if out != text:  # name what was taken, so a false find is easy to read
        taken = [line for line in out.splitlines() if "[redacted:" in line]
        pytest.fail(f"{path.name}: {taken[:5]}")


def test_bench_answer_is_left_alone():
    from bench.render import answer

    text = answer()
    assert redactor.redact(text) == text


# --- .env values by fingerprint --------------------------------------------------------------

ENV_VALUE = "tq84-Lmv0-Zr2x-Wa71"


def env_redactor(*values: str, salt: str | None = None) -> Redactor:
    salt = salt or new_salt()
    lengths, hashes = fingerprints(values, salt)
    r = Redactor()
    r.use_fingerprints(SecretFingerprints(salt=salt, lengths=lengths, hashes=hashes))
    return r


@pytest.mark.parametrize(
    "text",
    [
        f"DB_PASSWORD={ENV_VALUE}",
        f'export DB_PASSWORD="{ENV_VALUE}"',
        f"https://db.internal/login?user=app&password={ENV_VALUE}&next=/",
        f"mysql://app@db/main?ssl=1#{ENV_VALUE}",
        json.dumps({"password": ENV_VALUE}),
        f"```\n{ENV_VALUE}\n```",
        f"+DB_PASSWORD='{ENV_VALUE}'",
        f"error: login failed ({ENV_VALUE}); retrying",
    ],
)
def test_a_dotenv_value_is_found_by_its_fingerprint(text):
    out = env_redactor(ENV_VALUE, "unrelated-value-42").redact(text)
    assert ENV_VALUE not in out and marker(".env value") in out


def test_a_dotenv_value_in_a_url_password_is_gone_either_way():
    out = env_redactor(ENV_VALUE).redact(f"postgres://app:{ENV_VALUE}@db:5432/main")
    assert out == f"postgres://app:{marker('URL password')}@db:5432/main"


def test_short_values_are_not_fingerprinted_and_others_are_left_alone():
    r = env_redactor("true", "8080", ENV_VALUE)
    text = "DEBUG=true PORT=8080 and tq84-Lmv0-Zr2x-Wa72 (one character off)"
    assert len("8080") < MIN_LENGTH
    assert r.redact(text) == text


def test_a_fingerprint_under_another_salt_finds_nothing():
    salt = new_salt()
    lengths, hashes = fingerprints([ENV_VALUE], salt)
    r = Redactor()
    r.use_fingerprints(SecretFingerprints(salt=new_salt(), lengths=lengths, hashes=hashes))
    assert ENV_VALUE in r.redact(f"X={ENV_VALUE}")


@settings(max_examples=200, deadline=None)
@given(
    value=st.text(
        alphabet=st.characters(
            min_codepoint=33, max_codepoint=126, exclude_characters="\"'`,;()[]{}<>|\\"
        ),
        min_size=MIN_LENGTH,
        max_size=64,
    ),
    before=FILLER,
    after=FILLER,
)
def test_any_dotenv_value_between_separators_is_gone(value, before, after):
    r = env_redactor(value)
    out = r.redact(f"{before} {value}\n{after}")
    assert value not in out.replace(marker(".env value"), "")


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from([*list("ab=:/@?&# \n\t\"'(),;[]é"), "xyz", "k=v==", "été"]),
        max_size=60,
    ),
    lengths=st.frozensets(st.integers(min_value=1, max_value=12), min_size=1, max_size=4),
)
def test_hyperscan_and_python_find_the_same_dotenv_candidates(parts, lengths):
    text = "".join(parts)
    assert tokens_of_lengths(padded_runs(text), lengths) == candidates(text, lengths)


def test_fingerprints_outside_the_bounds_are_ignored_not_fatal():
    r = Redactor()
    for salt, lengths in (("not hex", [19]), ("ab" * 8, [10**6]), ("ab" * 80, [19])):
        r.use_fingerprints(SecretFingerprints(salt=salt, lengths=lengths, hashes=["00" * 12]))
        assert r.redact(f"X={ENV_VALUE}") == f"X={ENV_VALUE}"
    many = [f"value-{n:05d}-" + "x" * n for n in range(300)]
    lengths, hashes = fingerprints(many, new_salt())
    assert len(lengths) <= MAX_LENGTHS and len(hashes) <= MAX_LENGTHS
