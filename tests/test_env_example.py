"""`.env.example` and the docs' settings tables are generated from the settings models, list
every variable the code reads, and are safe to copy into a container (issue 17)."""

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rawp_app import settings_docs
from runtime.settings import comma_list, field_of, settings_of, value_of

ROOT = Path(__file__).resolve().parent.parent
VARIABLE = re.compile(r"\b((?:RAWP|DISCORD|SLACK)_[A-Z0-9_]+)\b")
# Variables only the test suite reads; they configure tests, not rawp.
TEST_ONLY = {"RAWP_TEST_POSTGRES_URL"}
LINE = re.compile(r"^(#\s*)?([A-Z][A-Z0-9_]+)=(.*)$", re.M)


def example_lines() -> list[tuple[bool, str, str]]:
    """(active, name, value) for each `NAME=value` line, commented or not."""
    text = (ROOT / ".env.example").read_text()
    return [(not m.group(1), m.group(2), m.group(3)) for m in LINE.finditer(text)]


@pytest.mark.parametrize(
    "path", sorted(settings_docs.documents(), key=str), ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_generated_files_match_the_models(path):
    wanted = settings_docs.documents()[path]
    assert path.read_text() == wanted, (
        f"{path.relative_to(ROOT)} is out of date: run `python -m rawp_app.settings_docs --write`"
    )


def test_every_variable_is_documented():
    documented = {name for _, name, _ in example_lines()}
    documented |= set(VARIABLE.findall(settings_docs.OTHERS))
    used = set()
    for package in ("rawp", "runtime", "master", "client", "gateway", "adapters", "rawp_app"):
        for path in (ROOT / package).rglob("*.py"):
            used |= set(VARIABLE.findall(path.read_text()))
    missing = sorted(used - documented - TEST_ONLY)
    assert not missing, f".env.example lacks {missing}"
    assert used, "the scan found no variable at all: the pattern is broken"


def test_copying_it_into_a_container_changes_nothing():
    """Issue 17: `cp .env.example .env` + `docker run --env-file .env` must not override the
    image (RAWP_MASTER_HOST=0.0.0.0) nor move its state: the only active lines are empty
    secrets, and an empty variable counts as unset."""
    active = [(name, value) for is_active, name, value in example_lines() if is_active]
    assert active, "no secret to fill in: the generator lost them"
    assert all(value == "" for _, value in active), active
    secrets = {doc.env for tier in settings_docs.TIERS for doc in tier.settings() if doc.secret}
    assert {name for name, _ in active} <= secrets
    dockerfile = "\n".join(
        line for line in (ROOT / "Dockerfile").read_text().splitlines() if not line.startswith("#")
    )
    image_sets = set(re.findall(r"\b(RAWP_[A-Z0-9_]+)=", dockerfile))
    assert "RAWP_MASTER_HOST" in image_sets, "the Dockerfile's ENV was not found"
    assert not image_sets & {name for name, _ in active}


def test_a_variable_two_commands_read_means_the_same_in_both():
    """`rawp up` states again settings of the tiers it runs (RAWP_AGENTS_FILE, RAWP_PLATFORM,
    the gateway's): their defaults and what they accept must agree."""
    seen: dict[str, tuple[str, str, str]] = {}
    shared = 0
    for tier in settings_docs.TIERS:
        for doc in tier.settings():
            if doc.env in seen:
                shared += 1
                first, default, accepts = seen[doc.env]
                assert (doc.default, doc.accepts) == (default, accepts), (
                    f"{doc.env}: {tier.key} says default {doc.default!r} / {doc.accepts!r}, "
                    f"{first} says {default!r} / {accepts!r}"
                )
            else:
                seen[doc.env] = (tier.key, doc.default, doc.accepts)
    assert shared >= 4  # RAWP_DEV, RAWP_EDGE_SECRET, RAWP_PLATFORM, RAWP_AGENTS_FILE, …


def test_every_setting_has_help_and_a_known_shape():
    for tier in settings_docs.TIERS:
        docs = tier.settings()
        assert docs, tier.model
        for doc in docs:
            assert doc.help and doc.env.isupper(), doc
            assert doc.flag is None or doc.flag.startswith("--"), doc
            # A URL may hold a password, so it is secret; it is also a flag people pass.
            urls = {"RAWP_DATABASE_URL", "RAWP_GATEWAY_DATABASE_URL", "RAWP_REDIS_URL"}
            assert not (doc.secret and doc.flag and doc.env not in urls), (
                f"{doc.env}: a token needs no flag"
            )


def test_settings_of_skips_fields_without_a_variable():
    from adapters.slack.settings import SlackSettings

    names = {doc.name for doc in settings_of(SlackSettings)}
    assert "max_retries" not in names and "bot_token" in names


def _model(tier: settings_docs.Tier):
    import importlib

    module, _, name = tier.model.partition(":")
    return getattr(importlib.import_module(module), name)


REQUIRED = {"DISCORD_BOT_TOKEN": "t", "SLACK_BOT_TOKEN": "t", "SLACK_APP_TOKEN": "t"}


@pytest.mark.parametrize("tier", settings_docs.TIERS, ids=lambda tier: tier.key)
def test_uncommenting_a_line_of_the_example_keeps_its_default(tier):
    """Every `# NAME=value` line, uncommented as it is, means the model's default (or its
    example, which must be valid too)."""
    model = _model(tier)
    for doc in tier.settings():
        for shown in {doc.default, doc.example} - {None, ""}:
            loaded = model.from_environment(environ={**REQUIRED, doc.env: shown})
            value = value_of(loaded, doc.name)
            if shown == doc.default:
                assert value == field_of(model, doc.name)[1].default, doc.env
            assert value is not None, doc.env


@given(
    st.lists(
        st.text(alphabet=st.characters(blacklist_characters=",", blacklist_categories=("Cs",)))
        .map(str.strip)
        .filter(bool)
    )
)
def test_comma_lists_split_as_written(items):
    assert comma_list(",".join(items)) == tuple(items)
    assert comma_list(" , ".join(items) + ",") == tuple(items)
