"""Settings models: one pydantic-settings class per command, the one place a setting is written.

Each command reads its configuration through one model — `master.settings.MasterSettings`,
`client.settings.ClientSettings`, `gateway.settings.GatewaySettings`,
`adapters.discord.settings.DiscordSettings`, `adapters.slack.settings.SlackSettings`,
`rawp_app.up_settings.UpSettings`, `rawp_app.doctor.settings.DoctorSettings` — and its
services take that model as it is, never a copy (issue 29 §2; tests/test_settings_homes.py).
A field there holds everything about a setting: its type and range (the annotation), its
default, its environment variable, its flag and its help. From the models come the command's
flags (`add_flags`), the one-line error for a bad value (`SettingError`), `.env.example` and the
settings tables in docs/operations-*.md (`rawp_app.settings_docs`, checked by
tests/test_env_example.py).

Rules:

1. Precedence: a flag on the command line, then the process environment, then `.env` in the
   WORKING DIRECTORY (rawp_app.cli loads it into the environment without overriding). An empty
   variable counts as unset.
2. `--help` never reads the environment: flag defaults are suppressed and the help text shows
   the model's default, so any environment prints help.
3. A bad value is one line naming the variable (or the flag it came from) and what it accepts;
   a secret's value is never repeated (`SecretStr`, no `got …`).
4. Building a model directly (`MasterSettings(port=1)`, as tests do) reads nothing from the
   environment: only `from_environment` does. A misspelt keyword is an error.
5. A concern with several settings is a group (`SettingGroup`, e.g. the master's `edge`): a
   field of the model typed with it, whose settings are read from the same flat variables and
   flags, named "group.field" in docs and errors. A field without `setting(...)` is a
   runtime-only tunable (no variable, no flag, not documented); a value derived from settings
   (a parsed rate, a URL with its password put in) is a property of the model.
6. A variable several commands read is declared once: a `*_setting(help)` function in
   runtime.shared_settings (or in the lower tier, e.g. `gateway.settings.platform_setting`)
   that each model calls.

Adding a setting is one change, in the tier's model — for example (master/settings.py):

    access_token_ttl: Seconds = setting(
        900,
        env="RAWP_MASTER_ACCESS_TOKEN_TTL",   # the variable, exactly as documented
        flag="--access-token-ttl",            # omit for an environment-only setting (secrets)
        help="lifetime of the access tokens …",  # one phrase: --help, .env.example, the docs
    )

The annotation carries type and range (`Annotated[int, Field(gt=0)]`; `Accepts("…")` words
what an error says it expects); a secret is `SecretStr` and has no flag (`plain(…)` gives its
text where a library needs it). Then use it where the services read the model
(`settings.access_token_ttl`), and run `python -m rawp_app.settings_docs --write` to
regenerate `.env.example` and the docs tables.
"""

from __future__ import annotations

import argparse
import os
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from annotated_types import Ge, Gt, Le, Lt
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars


@dataclass(frozen=True)
class Accepts:
    """Annotated metadata: the values a setting accepts, in words, for its error and docs."""

    text: str


def setting(
    default: Any,
    *,
    env: str,
    help: str,
    flag: str | None = None,
    repeat: bool = False,
    example: str | None = None,
) -> Any:
    """A field of a settings model (see the module docstring). `repeat`: the flag may be
    given several times, one item each. `example` is shown in `.env.example` where the
    default says little (a URL, an id list)."""
    extra: dict[str, Any] = {"help": help, "flag": flag, "repeat": repeat, "example": example}
    return Field(default, validation_alias=env, json_schema_extra=extra)


def comma_list(value: object) -> object:
    """`"a, b,,c"` → ("a", "b", "c"); other values pass through to the type's check."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


# Types shared by the tiers, with what they accept in words.
Port = Annotated[int, Field(ge=0, le=65535), Accepts("a port number 0–65535, 0 for any free one")]
Names = Annotated[
    tuple[str, ...],
    NoDecode,
    BeforeValidator(comma_list),
    Accepts("a comma-separated list"),
]
IdSet = Annotated[
    frozenset[str],
    NoDecode,
    BeforeValidator(comma_list),
    Accepts("comma-separated ids"),
]
Flag = Annotated[bool, Accepts("1 or 0 (also true/false, yes/no)")]
REDIS_SCHEMES = ("redis", "rediss", "unix")


def _redis_url(value: SecretStr | None) -> SecretStr | None:
    """Issue 34 §4: another scheme is a setting error (one line, exit 2), not redis-py's
    traceback when the first connection is made."""
    if value is not None and urlsplit(value.get_secret_value()).scheme not in REDIS_SCHEMES:
        raise ValueError("must start with redis://, rediss:// or unix://")
    return value


# Redis of the master's and the gateway's replicas (docs/scale-out.md); a URL may hold a password.
RedisUrl = Annotated[
    SecretStr | None,
    AfterValidator(_redis_url),
    Accepts("a redis://, rediss:// or unix:// URL (kept secret)"),
]
# A switch that may be left unset: None lets the code decide (e.g. from other settings).
AutoFlag = Annotated[
    bool | None,
    BeforeValidator(lambda value: value.strip() if isinstance(value, str) else value),
    Accepts("1 or 0 (also true/false, yes/no, on/off); none: automatic"),
]


def check_tls_pair(model: BaseSettings) -> None:
    """A model's `tls_cert` and `tls_key` are both set or both unset (a model validator's rule;
    the error names the flags and the model's own variables)."""
    if (model.tls_cert is None) != (model.tls_key is None):  # type: ignore[attr-defined]
        fields = type(model).model_fields
        cert, key = fields["tls_cert"].validation_alias, fields["tls_key"].validation_alias
        raise ValueError(f"--tls-cert and --tls-key go together ({cert}, {key})")


def plain(secret: SecretStr | None) -> str | None:
    """A secret setting's text where a library needs it (a URL, a token); None stays None."""
    return secret.get_secret_value() if secret is not None else None


class SettingGroup(BaseModel):
    """A concern's several settings inside a command's model (the master's `edge`): a field
    of a `CommandSettings` typed with a subclass of this. Its fields are `setting(...)`s read
    from the same flat environment and command line as the model's own (the variable and flag
    name the setting, not the group); docs, --help and errors treat them alike. A field
    without `setting(...)` is a runtime-only tunable: no variable, no flag, not documented."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        validate_default=True,
        arbitrary_types_allowed=True,
    )


def groups_of(model: type[BaseModel]) -> dict[str, type[SettingGroup]]:
    """The fields of `model` that are setting groups (field name → group class)."""
    return {
        name: field.annotation
        for name, field in model.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, SettingGroup)
    }


def field_of(model: type[BaseModel], name: str) -> tuple[type[BaseModel], FieldInfo]:
    """The model holding setting `name` ("port", or "edge.secret" in a group) and its field."""
    group, _, inner = name.rpartition(".")
    owner = groups_of(model)[group] if group else model
    return owner, owner.model_fields[inner]


def value_of(settings: BaseModel, name: str) -> Any:
    """The value of setting `name` ("port", or "edge.secret" in a group) in `settings`."""
    for part in name.split("."):
        settings = getattr(settings, part)
    return settings


class SettingError(ValueError):
    """A setting the command cannot run with; the message is one line, no secret in it."""


class CommandSettings(BaseSettings):
    """Base of every command's settings model (rules at the top of this module)."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",  # a misspelt keyword is an error, never a setting silently dropped
        populate_by_name=True,
        case_sensitive=True,
        env_ignore_empty=True,
        validate_default=True,
        arbitrary_types_allowed=True,
    )

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, **_others):
        # Rule 4: only `from_environment` reads the environment.
        return (init_settings,)

    @classmethod
    def from_environment(
        cls,
        flags: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ):
        """The model from `flags` (field name → value), over the environment (rule 1).

        Raises `SettingError` with one line naming the variable or flag of a bad value.
        """
        flags = dict(flags or {})
        environ = os.environ if environ is None else environ
        source = _MappingSource(cls, environ)
        by_alias = {field.validation_alias: name for name, field in cls.model_fields.items()}
        values: dict[str, Any] = {by_alias.get(key, key): value for key, value in source().items()}
        values.update(flags)  # rule 1: a flag wins over the environment
        given = parse_env_vars(environ, True, True, None)
        for group, model in groups_of(cls).items():
            inner = {
                name: given[field.validation_alias]
                for name, field in model.model_fields.items()
                if isinstance(field.validation_alias, str) and field.validation_alias in given
            }
            values[group] = {**inner, **flags.get(group, {})}
        try:
            return cls(**values)
        except ValidationError as exc:
            raise SettingError(_one_line(cls, exc, flags)) from None


class _MappingSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (os.environ in use)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(
            self._environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str
        )


# --- errors ---------------------------------------------------------------------------------


def _one_line(model: type[BaseModel], exc: ValidationError, flags: Mapping[str, Any]) -> str:
    error = exc.errors()[0]
    loc = error["loc"]
    name = str(loc[0]) if loc else ""
    if name in groups_of(model) and len(loc) > 1:  # a setting of a group: said as its own
        model, flags, name = groups_of(model)[name], flags.get(name, {}), str(loc[1])
    by_alias = {field.validation_alias: key for key, field in model.model_fields.items()}
    name = by_alias.get(name, name)  # a missing field is reported under its variable
    field = model.model_fields.get(name)
    if field is None or name in groups_of(model):  # a rule across fields: its message says it
        return str(error.get("ctx", {}).get("error") or error["msg"]).removeprefix("Value error, ")
    doc = describe(name, field)
    where = doc.flag if name in flags and doc.flag else doc.env
    if error["type"] == "missing":
        return f"{where} is not set: expected {doc.accepts}"
    if doc.secret:
        return f"{where}: expected {doc.accepts}"
    if error["type"] == "value_error":  # our own validator: its words say what it accepts
        reason = error.get("ctx", {}).get("error") or error["msg"]
        return f"{where}: {reason}"
    value = error.get("input")
    shown = value if isinstance(value, str) else str(value)
    return f"{where}: expected {doc.accepts}, got {shown!r}"


# --- what a field says about itself ---------------------------------------------------------


@dataclass(frozen=True)
class SettingDoc:
    """One setting as the docs, `.env.example` and --help show it."""

    name: str
    env: str
    flag: str | None
    help: str
    default: str  # as it would be written in .env ("" for none)
    accepts: str
    secret: bool
    example: str | None


def describe(name: str, field: FieldInfo) -> SettingDoc:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    annotation = field.annotation
    return SettingDoc(
        name=name,
        env=str(field.validation_alias),
        flag=extra.get("flag"),  # type: ignore[arg-type]
        help=str(extra.get("help", "")),
        default=_written(field.default),
        accepts=_accepts(annotation, field.metadata),
        secret=_is_secret(annotation),
        example=extra.get("example"),  # type: ignore[arg-type]
    )


def settings_of(model: type[BaseModel]) -> Iterator[SettingDoc]:
    """The documented settings of `model` in field order, a group's in its place, named
    "group.field"; runtime-only fields (no variable) are left out."""
    groups = groups_of(model)
    for name, field in model.model_fields.items():
        if name in groups:
            for doc in settings_of(groups[name]):
                yield describe(f"{name}.{doc.name}", groups[name].model_fields[doc.name])
        elif isinstance(field.validation_alias, str):
            yield describe(name, field)


def _written(value: Any) -> str:
    if value is None or value is PydanticUndefined:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple | frozenset | list):
        return ",".join(sorted(value) if isinstance(value, frozenset) else value)
    if isinstance(value, SecretStr):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _args(annotation: Any) -> tuple[Any, ...]:
    return typing.get_args(annotation)


def _without_none(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [arg for arg in _args(annotation) if arg is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


def _is_secret(annotation: Any) -> bool:
    return _without_none(annotation) is SecretStr


def _accepts(annotation: Any, metadata: list[Any]) -> str:
    for item in metadata:
        if isinstance(item, Accepts):
            return item.text
    kind = _without_none(annotation)
    if typing.get_origin(kind) is Literal:
        return "one of " + ", ".join(str(arg) for arg in _args(kind))
    if kind is bool:
        return "1 or 0"
    if kind in (int, float):
        return _number(kind, metadata)
    if kind is Path:
        return "a path"
    if kind is SecretStr:
        return "a secret, never shown"
    return "text"


def _number(kind: type, metadata: list[Any]) -> str:
    low = high = None
    low_strict = high_strict = False
    for item in metadata:
        if isinstance(item, Ge):
            low = item.ge
        elif isinstance(item, Gt):
            low, low_strict = item.gt, True
        elif isinstance(item, Le):
            high = item.le
        elif isinstance(item, Lt):
            high, high_strict = item.lt, True
    noun = "a whole number" if kind is int else "a number"
    if low is not None and high is not None and not (low_strict or high_strict):
        return f"{noun} {low}–{high}"
    parts = []
    if low is not None:
        parts.append(f"{'above' if low_strict else 'at least'} {low}")
    if high is not None:
        parts.append(f"{'below' if high_strict else 'at most'} {high}")
    return " ".join([noun, " and ".join(parts)]).strip()


# --- flags ----------------------------------------------------------------------------------


def add_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    model: type[BaseSettings],
    only: tuple[str, ...] | None = None,
) -> None:
    """Add a flag for each field of `model` that names one (rule 2: defaults suppressed)."""
    for doc in settings_of(model):
        if doc.flag is None or (only is not None and doc.name not in only):
            continue
        field = field_of(model, doc.name)[1]
        kind = _without_none(field.annotation)
        if kind is bool:
            default = "default on" if field.default else "default off"
        else:
            default = f"default {doc.default}" if doc.default else "default: none"
        help_text = f"{doc.help} ({doc.env}; {default})".replace("%", "%%")
        if field.json_schema_extra.get("repeat"):  # type: ignore[union-attr]
            parser.add_argument(
                doc.flag, dest=doc.name, action="append", default=argparse.SUPPRESS,
                metavar=_metavar(doc).removesuffix("S"), help=help_text,
            )  # fmt: skip
        elif kind is bool:
            parser.add_argument(
                doc.flag, dest=doc.name, action="store_true", default=argparse.SUPPRESS,
                help=help_text,
            )  # fmt: skip
        else:
            # Choices are shown, not enforced by argparse: the model checks them, so a bad
            # value is the same one line from a flag as from a variable (rule 3).
            choices = _args(kind) if typing.get_origin(kind) is Literal else ()
            metavar = "{" + ",".join(choices) + "}" if choices else _metavar(doc)
            parser.add_argument(
                doc.flag, dest=doc.name, default=argparse.SUPPRESS, metavar=metavar,
                help=help_text,
            )  # fmt: skip


def _metavar(doc: SettingDoc) -> str:
    """A flag's placeholder: the field's name; a group's field says it by its flag."""
    if "." in doc.name and doc.flag:
        return doc.flag.removeprefix("--").replace("-", "_").upper()
    return doc.name.upper()


def environment_only(model: type[BaseSettings]) -> str:
    """A --help epilog naming the settings that have no flag (secrets), so help lists them."""
    names = [doc.env for doc in settings_of(model) if doc.flag is None]
    return "Environment only (never a flag): " + ", ".join(names) + "." if names else ""


def flags_given(args: argparse.Namespace, model: type[BaseSettings]) -> dict[str, Any]:
    """The fields of `model` set by a flag on this command line (field name → value; a
    group's as a dict under the group's name)."""
    given = vars(args)
    flags: dict[str, Any] = {name: given[name] for name in model.model_fields if name in given}
    for doc in settings_of(model):
        group, _, inner = doc.name.rpartition(".")
        if group and doc.name in given:
            flags.setdefault(group, {})[inner] = given[doc.name]
    return flags


def load(model: type[CommandSettings], args: argparse.Namespace):
    """`model` from this command line's flags over the environment; a bad value raises
    `SettingError`, which `rawp_app.cli.main` prints as one line (exit 2)."""
    return model.from_environment(flags_given(args, model))
