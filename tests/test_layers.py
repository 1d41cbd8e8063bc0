"""The import layers of `ajetd` (docs/architecture.md), checked over the source's syntax tree.

Every `import` counts, at the top of a module and inside functions (a lazy import is still a
dependency); only cycles are judged on top-level imports, the ones that run at import time.
The rules are data, here at the top: read them before adding a module or an import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "supervisor" / "ajetd"

# The folders from the bottom up, one layer per line. A module may import modules of its own
# layer and of the layers below it, never above. (`ajetd/__init__.py` is below all,
# `ajetd/__main__.py` above.) `core` and `frameworks` are one layer: the decisions use what a
# framework writes (AgentJet's config paths, validation records) and a framework's reader fills
# a core record (NeMo-RL's `NemoRead`); the cycle check keeps them from importing in a circle.
LAYERS = (
    ("core", "frameworks"),  # records, blueprint, decisions; what AgentJet and NeMo-RL print
    ("diagnosis",),  # failure kinds and reading output for them
    ("views",),  # what people and programs read: records in, text out
    ("adapters",),  # the outside world on this machine: home, tmux, processes, NVML, git, hooks
    ("pictures",),  # what to draw, and the child processes that draw it
    ("hosts",),  # where a trial runs: here, over SSH, through Slurm
    ("daemon",),  # the loop and its steps
    ("cli",),  # the `ajetd` command line
)
FOLDERS = tuple(f for layer in LAYERS for f in layer)
ORDER = " < ".join(", ".join(layer) for layer in LAYERS)

# Pure folders do no I/O: no files, processes, network, threads, clocks or terminals ...
PURE = ("frameworks", "core", "diagnosis", "views")
# ... except these modules, which read a trial's output files (bounded) and import only what
# a pure module may.
READERS = ("ajetd.diagnosis.scan", "ajetd.diagnosis.live")

# Outside modules that do I/O; a pure module imports none of them (nor any submodule).
# `secrets` is not here: a random run id is not I/O (`core.naming` is given what is taken).
# fmt: off
IO_MODULES = frozenset((
    "subprocess", "socket", "shutil", "tempfile", "fcntl", "threading", "multiprocessing",
    "asyncio", "concurrent", "select", "selectors", "time", "logging", "sys", "glob", "mmap",
    "ctypes", "sqlite3", "pty", "tty", "termios", "resource", "platform", "getpass", "pwd", "grp",
    "atexit", "sched", "urllib", "http", "ssl", "webbrowser",
    "psutil", "pynvml", "watchdog", "libtmux", "matplotlib", "rich", "click",
))
# fmt: on
# `os`, `os.path` and `signal` are allowed in pure modules for these names only: string path
# arithmetic and signal numbers. `os.path.exists`, `os.stat`, `os.kill`, `signal.signal` ...
# touch the world and are I/O. `pathlib.Path` is allowed as a value; its I/O methods are not
# (IO_CALLS).
PURE_NAMES = {
    "os": frozenset({"path", "sep", "fspath", "PathLike"}),
    "os.path": frozenset(
        {"join", "basename", "dirname", "normpath", "isabs", "split", "splitext", "commonpath"}
    ),
}
PURE_SIGNAL_NAMES = ("SIG", "Signals", "strsignal", "valid_signals")  # prefixes
# Calls a pure module never makes: builtins, and methods of Path, files and clocks.
IO_BUILTINS = frozenset({"open", "input", "print", "breakpoint"})
# fmt: off
IO_CALLS = frozenset((
    "read_text", "read_bytes", "write_text", "write_bytes", "open", "mkdir", "rmdir", "unlink",
    "iterdir", "glob", "rglob", "stat", "lstat", "exists", "is_file", "is_dir", "is_symlink",
    "touch", "chmod", "resolve", "samefile", "readlink", "symlink_to", "cwd", "home",
    "expanduser", "now", "today", "utcnow",
))
# fmt: on
# Outside modules kept to one folder: matplotlib is imported only by the child processes that
# draw (so the daemon never loads it); the terminal libraries only by the CLI.
ONLY_IN = {"matplotlib": "ajetd.pictures", "click": "ajetd.cli", "rich": "ajetd.cli"}
# The CLI talks to the daemon by files; of the daemon it imports only what runs it.
CLI_FROM_DAEMON = {"ajetd.daemon.loop": frozenset({"Daemon", "DaemonConfig"})}
# Departures from the rules: (module, imported module) -> why. Keep it empty.
EXCEPTIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (an ajetd module resolved to its file, or an outside one)
    names: tuple[str, ...]  # what `from target import ...` takes; () for the whole module
    line: int
    top: bool  # runs at import time (not inside a function, not under TYPE_CHECKING)

    def __str__(self) -> str:
        what = f"from {self.target} import {', '.join(self.names)}" if self.names else self.target
        return f"{self.source} (line {self.line}) imports {what}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports_in(module: str) -> Iterator[Import]:
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    package = module if _is_package(module) else module.rpartition(".")[0]

    def walk(node: ast.AST, top: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            ) or _type_checking(child):
                yield from walk(child, False)
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(module, alias.name, (), child.lineno, top)
            elif isinstance(child, ast.ImportFrom):
                yield from _from_import(module, package, child, top)
            else:
                yield from walk(child, top)

    yield from walk(tree, True)


def _from_import(module: str, package: str, node: ast.ImportFrom, top: bool) -> Iterator[Import]:
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    names = tuple(a.name for a in node.names)
    plain = tuple(n for n in names if f"{target}.{n}" not in MODULES)
    for name in names:
        if f"{target}.{name}" in MODULES:  # `from ajetd.core import model`: the module itself
            yield Import(module, f"{target}.{name}", (), node.lineno, top)
    if plain or not names:
        yield Import(module, target, plain, node.lineno, top)


IMPORTS = [i for m in MODULES for i in _imports_in(m)]


def folder(module: str) -> str:
    """The layer a module belongs to: its folder under ajetd/ ("" for ajetd/*.py)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and _is_package(module)) else ""


def rank(module: str) -> int:
    if module == "ajetd.__main__":
        return len(LAYERS)
    where = folder(module)
    return next(i for i, layer in enumerate(LAYERS) if where in layer) if where else -1


def pure(module: str) -> bool:
    return folder(module) in PURE and module not in READERS


def _ours(target: str) -> bool:
    return target == "ajetd" or target.startswith("ajetd.")


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _allowed(imp: Import) -> bool:
    return (imp.source, imp.target) in EXCEPTIONS


def test_every_module_is_in_a_layer() -> None:
    stray = [m for m in MODULES if folder(m) not in ("", *FOLDERS)]
    loose = [m for m in MODULES if not folder(m) and m not in ("ajetd", "ajetd.__main__")]
    assert not stray and not loose, f"modules outside the layers: {stray + loose}"


def test_no_import_goes_up_the_layers() -> None:
    wrong = [
        f"{imp}: {folder(imp.target) or imp.target} is above {folder(imp.source) or 'it'}"
        for imp in IMPORTS
        if _ours(imp.target) and imp.target in MODULES and rank(imp.target) > rank(imp.source)
        if not _allowed(imp)
    ]
    assert not wrong, f"layers, bottom up: {ORDER}\n" + "\n".join(wrong)


def test_pure_modules_import_nothing_that_does_io() -> None:
    wrong = []
    for imp in IMPORTS:
        if not pure(imp.source) or _allowed(imp):
            continue
        if _ours(imp.target):
            if imp.target in MODULES and not pure(imp.target) and imp.target != "ajetd":
                wrong.append(f"{imp}: a pure module imports an I/O module")
        elif imp.target.split(".")[0] in IO_MODULES:
            wrong.append(f"{imp}: a pure module imports a module that does I/O")
        elif imp.target in PURE_NAMES and set(imp.names) - PURE_NAMES[imp.target]:
            wrong.append(f"{imp}: only {sorted(PURE_NAMES[imp.target])} of it are pure")
    assert not wrong, "\n".join(wrong)


def _io_calls(module: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in IO_BUILTINS:
                yield f"{module} (line {node.lineno}) calls {func.id}()"
            elif isinstance(func, ast.Attribute) and func.attr in IO_CALLS:
                yield f"{module} (line {node.lineno}) calls .{func.attr}()"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "signal" and not node.attr.startswith(PURE_SIGNAL_NAMES):
                yield f"{module} (line {node.lineno}) uses signal.{node.attr}"
            if node.value.id == "os" and node.attr not in PURE_NAMES["os"]:
                yield f"{module} (line {node.lineno}) uses os.{node.attr}"
        elif (
            isinstance(node, ast.Attribute)
            and ast.unparse(node.value) == "os.path"
            and node.attr not in PURE_NAMES["os.path"]
        ):
            yield f"{module} (line {node.lineno}) uses os.path.{node.attr}"


def test_pure_modules_make_no_io_calls() -> None:
    wrong = [call for m in MODULES if pure(m) for call in _io_calls(m)]
    assert not wrong, "pure modules touching the world:\n" + "\n".join(wrong)


def test_some_outside_modules_stay_in_one_folder() -> None:
    wrong = [
        f"{imp}: {imp.target.split('.')[0]} is imported only under {ONLY_IN[imp.target.split('.')[0]]}"
        for imp in IMPORTS
        if imp.target.split(".")[0] in ONLY_IN
        and not _under(imp.source, ONLY_IN[imp.target.split(".")[0]])
    ]
    lazy = [
        f"{imp}: matplotlib is imported inside the drawing functions only"
        for imp in IMPORTS
        if imp.target.split(".")[0] == "matplotlib" and imp.top
    ]
    assert not wrong and not lazy, "\n".join(wrong + lazy)


def test_the_cli_imports_no_daemon_internals() -> None:
    may = "; ".join(f"from {m} import {', '.join(sorted(n))}" for m, n in CLI_FROM_DAEMON.items())
    wrong = [
        f"{imp}: of the daemon the CLI imports only {may}"
        for imp in IMPORTS
        if _under(imp.source, "ajetd.cli") and _under(imp.target, "ajetd.daemon")
        if not imp.names or set(imp.names) - CLI_FROM_DAEMON.get(imp.target, frozenset())
        if not _allowed(imp)
    ]
    assert not wrong, "\n".join(wrong)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or with a self-loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in edges.get(node, ()):
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    edges: dict[str, set[str]] = {}
    for imp in IMPORTS:
        if imp.top and imp.target in MODULES and imp.target != imp.source.rpartition(".")[0]:
            edges.setdefault(imp.source, set()).add(imp.target)
    cycles = _cycles(edges)
    assert not cycles, "import cycles (top-level imports):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_sees_lazy_and_submodule_imports() -> None:
    main = [i for i in IMPORTS if i.source == "ajetd.cli.main"]
    assert any(not i.top for i in main)  # the CLI imports lazily, inside its commands
    record = {(i.target, i.names) for i in IMPORTS if i.source == "ajetd.core.campaignrecord"}
    assert ("ajetd.core.campaignspec", ()) in record  # `from ajetd.core import campaignspec as cs`


def test_every_folder_says_what_it_keeps_and_the_layers() -> None:
    """Each folder's `__init__` docstring says what lives there and what it may import, and
    gives the layer order as `LAYERS` has it (so a change of order changes both)."""
    wrong = []
    for module, path in MODULES.items():
        if path.name != "__init__.py" or module == "ajetd":
            continue
        doc = " ".join((ast.get_docstring(ast.parse(path.read_text())) or "").split())
        where = path.relative_to(SRC.parent)
        if "import" not in doc.lower():
            wrong.append(f"{where}: its docstring does not say what the folder may import")
        if ORDER not in doc:
            wrong.append(f"{where}: its docstring does not give the layers ({ORDER})")
    assert not wrong, "\n".join(wrong)
