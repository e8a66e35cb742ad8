"""One settings object per process (issue 29 §2): every RAWP_* variable the code reads is
declared once, in a model; nothing reads one from the environment by hand; and each process's
services take its pydantic model, not a copy filled from it."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections import Counter

import pytest

from rawp_app import settings_docs
from runtime.settings import CommandSettings, SettingGroup, settings_of
from tests.support import ROOT

PACKAGES = ("master", "client", "gateway", "adapters", "rawp_app", "runtime", "rawp")
# Read by the client's demo agent, a child process whose inputs these are (docs/agents.md);
# `rawp` itself never reads them.
CHILD_PROCESS = ("client/demo_agent.py",)


def sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def read_outside_the_commands() -> set[str]:
    """The variables settings_docs.OTHERS lists: a child process's or compose's, not rawp's."""
    return set(re.findall(r"RAWP_[A-Z0-9_]+", settings_docs.OTHERS))


def test_every_rawp_variable_is_declared_in_exactly_one_place():
    declared = Counter(
        node.value.value
        for text in sources().values()
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.keyword) and node.arg == "env"
        if isinstance(node.value, ast.Constant) and str(node.value.value).startswith("RAWP_")
    )
    twice = sorted(name for name, count in declared.items() if count > 1)
    assert not twice, f"declared more than once (share one declaration): {twice}"
    named = {
        name
        for path, text in sources().items()
        if path not in CHILD_PROCESS
        for name in re.findall(r"RAWP_[A-Z0-9_]+", text)
    }
    loose = sorted(named - set(declared) - read_outside_the_commands() - {"RAWP_"})
    assert not loose, f"named in the code but declared in no settings model: {loose}"


# A variable read by hand: os.environ["RAWP_…"], .get("RAWP_…"), getenv("RAWP_…"), env("RAWP_…").
BY_HAND = re.compile(r"""(\[|\.get\(|getenv\(|\benv\()\s*["']RAWP_""")


def test_no_rawp_variable_is_read_from_the_environment_by_hand():
    found = [
        f"{path}:{number}: {line.strip()}"
        for path, text in sources().items()
        if path not in CHILD_PROCESS
        for number, line in enumerate(text.splitlines(), 1)
        if BY_HAND.search(line)
    ]
    assert not found, "read through the process's settings model instead:\n" + "\n".join(found)


# Each process's model, and the entry point that takes it as its `settings`.
PROCESSES = {
    "master": ("master.settings:MasterSettings", "master.app:create_app"),
    "client": ("client.settings:ClientSettings", "client.app:create_app"),
    "gateway": ("gateway.settings:GatewaySettings", "rawp_app.launch:run_gateway"),
    "up": ("rawp_app.up_settings:UpSettings", "rawp_app.up:run_up"),
    "doctor": ("rawp_app.doctor.settings:DoctorSettings", "rawp_app.doctor:diagnose"),
}


def loaded(name: str):
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("process", PROCESSES)
def test_each_process_takes_its_one_model_as_it_is(process):
    model_name, entry_name = PROCESSES[process]
    model, entry = loaded(model_name), loaded(entry_name)
    assert issubclass(model, CommandSettings)
    assert not hasattr(model, "runtime"), "no runtime() copy: the services take the model"
    annotation = inspect.signature(entry).parameters["settings"].annotation
    assert annotation in (model, model.__name__), f"{entry_name} takes {annotation}"
    assert list(settings_of(model)), "its settings are documented from the model"


# The settings modules, and the modules that load a model and start the services with it.
SETTINGS_MODULES = sorted(
    {name.partition(":")[0] for pair in PROCESSES.values() for name in pair}
    | {"master.cli", "client.cli", "gateway.cli"}
)


@pytest.mark.parametrize("module", SETTINGS_MODULES)
def test_settings_are_held_by_models_only_never_copied_into_a_dataclass(module):
    """Every *Settings / *Options / *Config class of these modules is a model or one of its
    groups: no dataclass filled from it field by field."""
    for name, kind in vars(importlib.import_module(module)).items():
        if (
            inspect.isclass(kind)
            and kind.__module__ == module
            and re.search(r"(Settings|Options|Config)$", name)
        ):
            assert issubclass(kind, CommandSettings | SettingGroup), f"{module}.{name}"
