"""Setting groups (runtime.settings.SettingGroup, issue 29 §2): a concern's several settings
nested in a command's model, read from the same flat variables and flags as the model's own."""

from __future__ import annotations

import argparse

import pytest
from pydantic import Field, ValidationError, model_validator

from runtime.settings import (
    CommandSettings,
    SettingError,
    SettingGroup,
    add_flags,
    field_of,
    flags_given,
    setting,
    settings_of,
    value_of,
)


class Pool(SettingGroup):
    size: int = setting(4, env="SAMPLE_POOL_SIZE", flag="--pool-size", help="connections")
    name: str = setting("main", env="SAMPLE_POOL_NAME", flag="--pool-name", help="its name")
    retries: int = 3  # runtime-only: no variable, no flag, not documented

    @model_validator(mode="after")
    def _named(self) -> Pool:
        if self.name == "nobody":
            raise ValueError("SAMPLE_POOL_NAME may not be nobody")
        return self


class Sample(CommandSettings):
    port: int = setting(80, env="SAMPLE_PORT", flag="--port", help="port")
    pool: Pool = Field(default_factory=Pool)
    verbose: bool = setting(False, env="SAMPLE_VERBOSE", flag="--verbose", help="say more")


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_flags(parser, Sample)
    return parser.parse_args(argv)


def test_a_groups_settings_come_from_the_same_flat_environment_and_flags():
    environ = {"SAMPLE_PORT": "81", "SAMPLE_POOL_SIZE": "9", "SAMPLE_POOL_NAME": "env"}
    from_env = Sample.from_environment(environ=environ)
    assert (from_env.port, from_env.pool.size, from_env.pool.name) == (81, 9, "env")
    flags = flags_given(parsed("--pool-name", "flag", "--port", "82"), Sample)
    assert flags == {"port": "82", "pool": {"name": "flag"}}
    both = Sample.from_environment(flags, environ)
    assert (both.port, both.pool.size, both.pool.name) == (82, 9, "flag")  # a flag wins
    assert Sample().pool == Pool() and Sample().pool.retries == 3


def test_a_bad_value_in_a_group_names_its_flag_or_its_variable():
    with pytest.raises(SettingError, match=r"^SAMPLE_POOL_SIZE: expected a whole number"):
        Sample.from_environment(environ={"SAMPLE_POOL_SIZE": "many"})
    with pytest.raises(SettingError, match=r"^--pool-size: expected a whole number, got 'x'$"):
        Sample.from_environment({"pool": {"size": "x"}}, environ={})
    with pytest.raises(SettingError, match=r"^SAMPLE_POOL_NAME may not be nobody$"):
        Sample.from_environment(environ={"SAMPLE_POOL_NAME": "nobody"})


def test_docs_and_help_list_a_groups_settings_in_place_and_leave_runtime_only_fields_out():
    names = [doc.name for doc in settings_of(Sample)]
    assert names == ["port", "pool.size", "pool.name", "verbose"]
    assert field_of(Sample, "pool.size") == (Pool, Pool.model_fields["size"])
    assert value_of(Sample(pool=Pool(size=2)), "pool.size") == 2
    parser = argparse.ArgumentParser()
    add_flags(parser, Sample)
    assert "POOL_SIZE" in parser.format_help() and "SAMPLE_POOL_SIZE" in parser.format_help()


def test_a_misspelt_setting_is_an_error_not_silently_dropped():
    with pytest.raises(ValidationError):
        Sample(prot=1)
    with pytest.raises(ValidationError):
        Pool(sise=1)
