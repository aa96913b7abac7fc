"""The house's rules, checked on the imports of every module under ``src/rocketq`` (STYLE.md §2).

* each package imports only the packages its row of the table allows (and never the stdlib modules listed);
* outside ``rocketq.client`` nobody imports a private ``rocketq.client._*`` module: ``rocketq.client`` and
  ``rocketq.client.lowlevel`` are the client's face;
* there is no import circle between modules anywhere in ``src/`` — imports under ``if TYPE_CHECKING:``
  included, since a circle there is the same coupling.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import rocketq

SRC = Path(rocketq.__file__).parent
ROOT = "rocketq"
#: everybody may import these leaves (the package root only for ``__version__``)
BASE = frozenset({"codes", "errors", "common", "__init__"})

#: package → the rocketq packages it may import besides BASE (STYLE §2; bench is the measuring tool)
ALLOWED: dict[str, frozenset[str]] = {
    "codes": frozenset(),
    "errors": frozenset(),
    "common": frozenset(),
    "protocol": frozenset(),
    "filter": frozenset({"protocol"}),
    "acl": frozenset({"protocol"}),
    "store": frozenset({"protocol"}),
    "remoting": frozenset({"protocol"}),
    "namesrv": frozenset({"remoting", "protocol", "acl", "replication"}),
    "replication": frozenset({"store", "remoting", "protocol"}),
    "broker": frozenset({"store", "filter", "remoting", "protocol", "acl", "replication"}),
    "client": frozenset({"remoting", "filter", "protocol", "acl"}),
    # the gRPC front is an adapter over the broker's services (remoting only for exposure's bind rule)
    "grpc": frozenset({"broker", "protocol", "acl", "store", "remoting"}),
    # remoting: only exposure's bind rule, which `rocketq console` applies to its own listening address
    # cli and testing are composition roots: they build brokers, and hand them the gRPC front end (grpc)
    "cli": frozenset(
        {"client", "protocol", "broker", "namesrv", "bench", "acl", "replication", "console", "remoting", "grpc"}
    ),
    # the web console reaches the cluster only through the client SDK, as RocketMQ Dashboard does through its admin
    "console": frozenset({"client", "protocol", "acl"}),
    "spark": frozenset({"client", "protocol"}),
    "bench": frozenset({"client", "remoting", "protocol"}),
    "testing": frozenset(
        {"broker", "namesrv", "client", "remoting", "protocol", "store", "filter", "acl", "replication", "console",
         "grpc"}
    ),
    "__main__": frozenset({"cli"}),
    "__init__": frozenset(),
}
#: stdlib modules a package must not import
FORBIDDEN_STDLIB: dict[str, frozenset[str]] = {
    "codes": frozenset({"asyncio", "socket", "mmap"}),
    "errors": frozenset({"asyncio", "socket", "mmap"}),
    "common": frozenset({"asyncio", "socket", "mmap"}),
    "protocol": frozenset({"asyncio", "socket", "ssl", "mmap"}),
    "filter": frozenset({"asyncio", "socket"}),
    "acl": frozenset({"asyncio", "socket", "ssl"}),
    "store": frozenset({"asyncio", "socket", "ssl"}),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([ROOT, *parts])


MODULES: dict[str, Path] = {_module_name(p): p for p in SRC.rglob("*.py")}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(module: str) -> Iterator[str]:
    """Every rocketq module ``module`` imports, resolved to a module of the tree (TYPE_CHECKING included)."""
    path = MODULES[module]
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == ROOT:
                    yield _existing(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield sub if sub in MODULES else _existing(target)


def _existing(name: str) -> str:
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


GRAPH: dict[str, set[str]] = {m: set(_imports(m)) - {m} for m in MODULES}


def test_every_package_imports_only_what_its_row_allows() -> None:
    broken = []
    for module, targets in GRAPH.items():
        pkg = _package(module)
        allowed = ALLOWED[pkg] | BASE | {pkg}
        if pkg in ("codes", "errors", "common"):
            allowed = BASE - {"__init__"} | {pkg}
        for target in targets:
            if _package(target) not in allowed:
                broken.append(f"{module} imports {target}")
    assert not broken, "\n".join(sorted(broken))


def test_forbidden_stdlib_modules() -> None:
    broken = []
    for module, path in MODULES.items():
        forbidden = FORBIDDEN_STDLIB.get(_package(module), frozenset())
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            broken += [f"{module} imports {n}" for n in names if n.split(".")[0] in forbidden]
    assert not broken, "\n".join(broken)


def test_no_private_client_module_outside_the_client() -> None:
    broken = [
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if _package(module) != "client"
        for target in targets
        if target.startswith("rocketq.client._")
    ]
    assert not broken, "\n".join(sorted(broken))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circle_anywhere() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
