"""A generated file list with the shape of a large monorepo, for bench/file_search.py.

Deterministic (seeded): the same size gives the same paths in every run, so runs compare.
The shape: a few top-level areas (`services/`, `libs/`, `apps/`, `tools/`, `third_party/` …),
hundreds to thousands of packages named from a word list (`payment-gateway`, `user_profile`),
each laid out the way its language does it (`src/main/java/com/acme/<pkg>/…/*.java`,
`src/components/<Name>/index.tsx`, `<pkg>/<module>/__init__.py`, `cmd/<x>/main.go`), with the
usual repeated names (`BUILD.bazel`, `package.json`, `README.md`, `__init__.py`, `index.ts`)
and deep directories; paths average about 75 characters.
"""

from __future__ import annotations

import random

AREAS = ["services", "libs", "apps", "tools", "platform", "infra", "third_party", "experimental"]
WORDS = (  # noqa: SIM905  (a word list reads better as words)
    "account auth billing cache catalog checkout config core data device edge email event "
    "feature feed file flag gateway graph health identity image index inventory invoice "
    "ledger locale logging media message metrics mobile model notify order payment pipeline "
    "policy pricing profile proxy query queue rating report search session shipping social "
    "storage stream sync tax tenant token trace user video wallet web widget worker"
).split()
NOUNS = (  # noqa: SIM905
    "api client controller handler helper manager mapper model parser provider reader "
    "repository resolver router schema serializer service store util validator view writer"
).split()
COMMON = ["README.md", "BUILD.bazel", "OWNERS", "CHANGELOG.md", "Makefile", ".gitignore"]


def _package_name(rng: random.Random) -> str:
    words = rng.sample(WORDS, rng.choice((1, 2, 2, 3)))
    return rng.choice(("-", "_", "-"))[0].join(words)


def _camel(words: list[str]) -> str:
    return "".join(w.capitalize() for w in words)


def _java(rng: random.Random, pkg: str) -> list[str]:
    base = f"src/main/java/com/acme/{pkg.replace('-', '').replace('_', '')}"
    out = []
    for sub in rng.sample(NOUNS, rng.randint(2, 6)):
        for _ in range(rng.randint(3, 12)):
            name = _camel([rng.choice(WORDS), rng.choice(NOUNS)])
            out.append(f"{base}/{sub}/{name}.java")
            if rng.random() < 0.6:
                test = base.replace("src/main", "src/test")
                out.append(f"{test}/{sub}/{name}Test.java")
    out += ["pom.xml", "src/main/resources/application.yaml"]
    return out


def _typescript(rng: random.Random, pkg: str) -> list[str]:
    out = ["package.json", "tsconfig.json", "src/index.ts"]
    for _ in range(rng.randint(4, 20)):
        comp = _camel(rng.sample(WORDS, 2))
        folder = rng.choice(("components", "pages", "hooks", "features/" + rng.choice(WORDS)))
        out += [f"src/{folder}/{comp}/index.tsx", f"src/{folder}/{comp}/{comp}.tsx"]
        if rng.random() < 0.7:
            out.append(f"src/{folder}/{comp}/{comp}.test.tsx")
        if rng.random() < 0.5:
            out.append(f"src/{folder}/{comp}/{comp}.module.css")
    for _ in range(rng.randint(2, 8)):
        out.append(f"src/utils/{rng.choice(WORDS)}{_camel([rng.choice(NOUNS)])}.ts")
    return out


def _python(rng: random.Random, pkg: str) -> list[str]:
    mod = pkg.replace("-", "_")
    out = ["pyproject.toml", f"{mod}/__init__.py", "tests/__init__.py", "tests/conftest.py"]
    for sub in rng.sample(WORDS, rng.randint(1, 5)):
        out.append(f"{mod}/{sub}/__init__.py")
        for noun in rng.sample(NOUNS, rng.randint(2, 8)):
            out.append(f"{mod}/{sub}/{noun}.py")
            if rng.random() < 0.5:
                out.append(f"tests/{sub}/test_{noun}.py")
    return out


def _go(rng: random.Random, pkg: str) -> list[str]:
    out = ["go.mod", "go.sum", f"cmd/{pkg}/main.go"]
    for sub in rng.sample(NOUNS, rng.randint(2, 7)):
        for _ in range(rng.randint(1, 6)):
            stem = f"{rng.choice(WORDS)}_{sub}"
            out += [f"internal/{sub}/{stem}.go", f"internal/{sub}/{stem}_test.go"]
    if rng.random() < 0.5:
        out.append(f"api/proto/{pkg.replace('-', '_')}/v1/{rng.choice(WORDS)}.proto")
    return out


def _cpp(rng: random.Random, pkg: str) -> list[str]:
    out = ["CMakeLists.txt"]
    for _ in range(rng.randint(3, 15)):
        stem = f"{rng.choice(WORDS)}_{rng.choice(NOUNS)}"
        out += [f"include/{pkg}/{stem}.h", f"src/{stem}.cc", f"test/{stem}_test.cc"]
    return out


def _rust(rng: random.Random, pkg: str) -> list[str]:
    out = ["Cargo.toml", "src/lib.rs", "src/main.rs"]
    for _ in range(rng.randint(2, 12)):
        out.append(f"src/{rng.choice(NOUNS)}/{rng.choice(WORDS)}.rs")
    return out


LAYOUTS = [_java, _typescript, _typescript, _python, _python, _go, _cpp, _rust]


def paths(count: int, seed: int = 20) -> list[str]:
    """`count` distinct file paths, POSIX, relative, shortest directories first in no order."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    serial = 0
    while len(out) < count:
        serial += 1
        area = rng.choice(AREAS)
        team = rng.choice(WORDS) if rng.random() < 0.6 else ""
        pkg = _package_name(rng)
        depth = "/".join(rng.sample(WORDS, rng.choice((0, 0, 1, 2))))
        base = "/".join(p for p in (area, team, depth, f"{pkg}-{serial}") if p)
        files = rng.choice(LAYOUTS)(rng, pkg)
        files += rng.sample(COMMON, rng.randint(1, 4))
        if rng.random() < 0.2:
            files += [f"docs/{rng.choice(WORDS)}-{rng.choice(NOUNS)}.md" for _ in range(3)]
        for rel in files:
            path = f"{base}/{rel}"
            if path not in seen:
                seen.add(path)
                out.append(path)
                if len(out) == count:
                    break
    return out
