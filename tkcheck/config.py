"""Configuration: `[tool.tkcheck]` in pyproject.toml, or a `tkcheck.toml`.

The closest file walking up from the checked path wins (a pyproject.toml
without a [tool.tkcheck] table does not count), and in one folder
`tkcheck.toml` wins over pyproject.toml, as ruff does with ruff.toml. The keys
of a tkcheck.toml sit at its top level. `--config KEY=VALUE` overrides any key
with a TOML value (`--config arch=sm_100a` works too: a value that is not TOML
is taken as a bare string).

Relative paths in a file resolve against that file's folder, so a config
means the same thing whichever folder tkcheck runs from; relative paths in an
override resolve against the current folder, where the user typed them.
Every mistake raises ConfigError with the file and key in the message: a
config error must never surface as a traceback (the CLI exits 2).
"""

from __future__ import annotations

import difflib
import pathlib
import re
import shlex
import tomllib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping

Path = pathlib.Path

CONFIG_FILE = "tkcheck.toml"
PYPROJECT = "pyproject.toml"
ARCHES = ("sm_90a", "sm_100a")
TK_VERSIONS = ("auto", "thread-scope", "lane-guarded")
MAX_CONFIG_BYTES = 16_000_000


class ConfigError(Exception):
    """A config file or override that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class ConfirmConfig:
    """`[confirm]`: how `tkcheck confirm` builds and runs the instrumented kernel.

    `build`/`run` are a shell command (str) or an argv (tuple); None = not given.
    """

    build: str | tuple[str, ...] | None = None
    run: str | tuple[str, ...] | None = None
    timeout: float | None = None  # seconds per run
    sanitizer_args: tuple[str, ...] = ()
    # regular expressions (per output line): a run fails when one of fail_pattern matches (on top
    # of the built-in self-check spellings); with pass_pattern, a run passes only when one matches
    fail_pattern: tuple[str, ...] = ()
    pass_pattern: tuple[str, ...] = ()

    def format_ready(self) -> "ConfirmConfig":
        """The commands with every brace doubled except the placeholders `{src}`, `{bin}` and
        `{dir}`, for `str.format`: `${HOME}` and `awk '{print $1}'` stay as the user wrote them."""
        return replace(self, build=_format_ready(self.build), run=_format_ready(self.run))


CONFIRM_PLACEHOLDERS = ("src", "bin", "dir")
_PLACEHOLDER = re.compile(r"\{(?:" + "|".join(CONFIRM_PLACEHOLDERS) + r")\}")


def _format_ready(cmd: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
    if cmd is None:
        return None
    if isinstance(cmd, (list, tuple)):
        return tuple(_format_one(c) for c in cmd)
    return _format_one(cmd)


def _format_one(cmd: str) -> str:
    parts = []
    pos = 0
    for m in _PLACEHOLDER.finditer(cmd):
        parts.append(cmd[pos : m.start()].replace("{", "{{").replace("}", "}}"))
        parts.append(m.group())
        pos = m.end()
    parts.append(cmd[pos:].replace("{", "{{").replace("}", "}}"))
    return "".join(parts)


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    # (glob, selectors) pairs in file order; a tuple so that Config stays hashable.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    arch: str | None = None  # None: decided by the CLI / the kernel
    tk_include: Path | None = None
    include_dirs: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()  # clang -D spelling: "NAME" or "NAME=VALUE"
    clang_args: tuple[str, ...] = ()
    compile_commands: Path | None = None  # a compile_commands.json or its folder
    tk_version: str = "auto"
    output_format: str | None = None
    sass: bool | None = None  # None: run the SASS pass when nvcc is found
    baseline: Path | None = None  # findings recorded there are not reported (--baseline)
    require_coverage: float | None = None  # percent of sync ops modelled every kernel must reach
    # file selection while walking folders (tkcheck.file_selection): (glob, the folder it is
    # relative to) pairs; `exclude` None keeps the defaults, `extend-exclude` adds to them
    exclude: tuple[tuple[str, str], ...] | None = None
    extend_exclude: tuple[tuple[str, str], ...] = ()
    respect_gitignore: bool = True
    confirm: ConfirmConfig = field(default_factory=ConfirmConfig)
    source: Path | None = None  # the file these values came from
    # settings that run programs, found in a repository's config file and not honoured (no
    # --trust-config): shown to the user as a note
    untrusted: tuple[str, ...] = ()

    @property
    def root(self) -> Path | None:
        """The folder per-file-ignores globs are relative to."""
        return self.source.parent if self.source is not None else None


# ---------------------------------------------------------------- value checks


def _fail(where: str, key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{where}: '{key}' must be {expected}, got {_show(value)}")


def _show(value: Any) -> str:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "table"}.get(
        type(value), type(value).__name__
    )
    text = repr(value)
    return f"{kind} {text if len(text) <= 60 else text[:57] + '...'}"


def _strings(value: Any, where: str, key: str, *, split: Callable[[str], list[str]]) -> tuple[str, ...]:
    """A list of strings; a single string is split (commas for codes, shell words for args)."""
    if isinstance(value, str):
        try:
            return tuple(split(value))
        except ValueError as exc:  # shlex: an unbalanced quote
            raise ConfigError(f"{where}: '{key}': cannot split {value!r} into arguments: {exc}") from None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _fail(where, key, "a list of strings", value)


def _comma_split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _shell_split(text: str) -> list[str]:
    return shlex.split(text)


def _path(value: Any, where: str, key: str, base: Path) -> Path:
    """A path; relative ones join `base` (the config file's folder, or the cwd)."""
    if not isinstance(value, str) or not value:
        raise _fail(where, key, "a path (string)", value)
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _choice(value: Any, where: str, key: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise _fail(where, key, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def _safe(check: Callable[..., Any], values: Iterable[str], where: str, key: str) -> None:
    """Static mode never writes files or loads code: refuse compiler options that would."""
    from .compiler_options import UnsafeOption

    try:
        check(values, where=f"{where}: '{key}'")
    except UnsafeOption as exc:
        raise ConfigError(str(exc)) from None


def _defines(value: Any, where: str, key: str) -> tuple[str, ...]:
    """["NDEBUG", "STAGES=4"] or {NDEBUG = true, STAGES = 4}, kept in clang's -D spelling."""
    if isinstance(value, dict):
        out = []
        for name, val in value.items():
            if val is True:
                out.append(name)
            elif isinstance(val, (str, int, float)) and not isinstance(val, bool):
                out.append(f"{name}={val}")
            else:
                raise _fail(where, f"{key}.{name}", "true, a number or a string", val)
        defines = tuple(out)
    else:
        defines = _strings(value, where, key, split=_shell_split)
    _safe(lambda v, where: _check_each("define", v, where), defines, where, key)
    return defines


def _check_each(kind: str, values: Iterable[str], where: str) -> None:
    from .compiler_options import check_define, check_include_dir

    for v in values:
        (check_define if kind == "define" else check_include_dir)(v, where)


def _clang_args(value: Any, where: str, key: str) -> tuple[str, ...]:
    from .compiler_options import check_clang_args

    args = _strings(value, where, key, split=_shell_split)
    _safe(check_clang_args, args, where, key)
    return args


def _folders(value: Any, where: str, key: str, base: Path) -> tuple[Path, ...]:
    paths = tuple(_path(p, where, key, base) for p in _strings(value, where, key, split=lambda s: [s]))
    _safe(lambda v, where: _check_each("folder", v, where), [str(p) for p in paths], where, key)
    return paths


def _command(value: Any, where: str, key: str) -> str | tuple[str, ...]:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _fail(where, key, "a command (string) or a non-empty list of strings", value)


def _timeout(value: Any, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise _fail(where, key, "a positive number of seconds", value)
    return float(value)


def _per_file_ignores(value: Any, where: str, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise _fail(where, key, 'a table of glob = ["CODE", ...]', value)
    return tuple((glob, _strings(codes, where, f"{key}.{glob!r}", split=_comma_split)) for glob, codes in value.items())


def _percent(value: Any, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise _fail(where, key, "a percentage from 0 to 100", value)
    return float(value)


def _globs(value: Any, where: str, key: str, base: Path) -> tuple[tuple[str, str], ...]:
    """Exclusion globs, each with the folder it is relative to (the config file's, or the cwd)."""
    globs = _strings(value, where, key, split=_comma_split)
    for g in globs:
        if g.startswith("!") or "\0" in g:
            raise _fail(where, key, "globs (no `!` negation: use a narrower pattern)", value)
    return tuple((g, str(base)) for g in globs)


def _bool(value: Any, where: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, key, "true or false", value)
    return value


# Each key: (field name, converter(value, where, key, base)).
_KEYS: dict[str, tuple[str, Callable[..., Any]]] = {
    "select": ("select", lambda v, w, k, b: _strings(v, w, k, split=_comma_split)),
    "ignore": ("ignore", lambda v, w, k, b: _strings(v, w, k, split=_comma_split)),
    "extend-select": ("extend_select", lambda v, w, k, b: _strings(v, w, k, split=_comma_split)),
    "per-file-ignores": ("per_file_ignores", lambda v, w, k, b: _per_file_ignores(v, w, k)),
    "arch": ("arch", lambda v, w, k, b: _choice(v, w, k, ARCHES)),
    "tk-include": ("tk_include", _path),
    "include-dirs": ("include_dirs", _folders),
    "defines": ("defines", lambda v, w, k, b: _defines(v, w, k)),
    "clang-args": ("clang_args", lambda v, w, k, b: _clang_args(v, w, k)),
    "compile-commands": ("compile_commands", _path),
    "tk-version": ("tk_version", lambda v, w, k, b: _choice(v, w, k, TK_VERSIONS)),
    "output-format": ("output_format", lambda v, w, k, b: _choice(v, w, k, _formats())),
    "sass": ("sass", lambda v, w, k, b: _bool(v, w, k)),
    "baseline": ("baseline", _path),
    "require-coverage": ("require_coverage", lambda v, w, k, b: _percent(v, w, k)),
    "exclude": ("exclude", _globs),
    "extend-exclude": ("extend_exclude", _globs),
    "respect-gitignore": ("respect_gitignore", lambda v, w, k, b: _bool(v, w, k)),
}

_CONFIRM_KEYS: dict[str, tuple[str, Callable[..., Any]]] = {
    "build": ("build", lambda v, w, k, b: _command(v, w, k)),
    "run": ("run", lambda v, w, k, b: _command(v, w, k)),
    "timeout": ("timeout", lambda v, w, k, b: _timeout(v, w, k)),
    "sanitizer-args": ("sanitizer_args", lambda v, w, k, b: _strings(v, w, k, split=_shell_split)),
    "fail-pattern": ("fail_pattern", lambda v, w, k, b: _patterns(v, w, k)),
    "pass-pattern": ("pass_pattern", lambda v, w, k, b: _patterns(v, w, k)),
}


def _patterns(value: Any, where: str, key: str) -> tuple[str, ...]:
    """Regular expressions: one string or a list of strings, each one that Python compiles."""
    import re

    pats = (value,) if isinstance(value, str) else _strings(value, where, key, split=lambda t: [t])
    for p in pats:
        try:
            re.compile(p)
        except re.error as exc:
            raise ConfigError(f"{where}: '{key}': {p!r} is not a regular expression ({exc})") from None
    return tuple(pats)


def _formats() -> tuple[str, ...]:
    from .formats import OUTPUT_FORMATS

    return OUTPUT_FORMATS


def _unknown(where: str, key: str, known: Iterable[str], hint: str = "") -> ConfigError:
    close = difflib.get_close_matches(key, list(known), n=1)
    more = f" (did you mean '{close[0]}'?)" if close else hint
    return ConfigError(f"{where}: unknown key '{key}'{more}")


def _convert(table: Mapping[str, Any], where: str, base: Path, *, hint: str = "") -> dict[str, Any]:
    """Checked Config field values from one raw TOML table."""
    fields: dict[str, Any] = {}
    for key, value in table.items():
        if key == "confirm":
            if not isinstance(value, dict):
                raise _fail(where, key, "a table", value)
            fields["confirm"] = _convert_confirm(value, where, base)
            continue
        if key not in _KEYS:
            raise _unknown(where, key, [*_KEYS, "confirm"], hint)
        name, convert = _KEYS[key]
        fields[name] = convert(value, where, key, base)
    return fields


def _convert_confirm(table: Mapping[str, Any], where: str, base: Path) -> dict[str, Any]:
    fields = {}
    for key, value in table.items():
        if key not in _CONFIRM_KEYS:
            raise _unknown(where, f"confirm.{key}", [f"confirm.{k}" for k in _CONFIRM_KEYS])
        name, convert = _CONFIRM_KEYS[key]
        fields[name] = convert(value, where, f"confirm.{key}", base)
    return fields


def _build(fields: dict[str, Any], source: Path | None) -> Config:
    confirm = ConfirmConfig(**fields.pop("confirm", {}))
    return Config(**fields, confirm=confirm, source=source)


# ---------------------------------------------------------------- files


def _read_toml(path: Path) -> dict[str, Any]:
    from .safe_io import NotReadable, read_regular

    try:
        text = read_regular(path, MAX_CONFIG_BYTES).decode("utf-8")
    except NotReadable as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8 (TOML files must be UTF-8)") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _table_of(path: Path) -> dict[str, Any] | None:
    """The tkcheck table of a config file, or None for a pyproject without one."""
    data = _read_toml(path)
    if path.name != PYPROJECT:
        return data
    tool = data.get("tool")
    table = tool.get("tkcheck") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.tkcheck] must be a table")
    return table


def find_config(start: Path) -> Path | None:
    """The closest tkcheck.toml, or pyproject.toml with [tool.tkcheck], above `start`."""
    start = Path(start).absolute()
    folder = start if start.is_dir() else start.parent
    for here in (folder, *folder.parents):
        candidate = here / CONFIG_FILE
        if candidate.is_file():
            return candidate
        candidate = here / PYPROJECT
        if candidate.is_file() and _table_of(candidate) is not None:
            return candidate
    return None


def read_config(path: Path) -> Config:
    """The Config of one file (tkcheck.toml, or a pyproject.toml's [tool.tkcheck])."""
    path = Path(path).absolute()
    table = _table_of(path)
    if table is None:
        raise ConfigError(f"{path}: no [tool.tkcheck] table")
    where = str(path) if path.name != PYPROJECT else f"{path} [tool.tkcheck]"
    hint = ""
    if path.name != PYPROJECT and "tool" in table:
        hint = f" ({CONFIG_FILE} holds the keys at its top level, without [tool.tkcheck])"
    return _build(_convert(table, where, path.parent, hint=hint), path)


# ---------------------------------------------------------------- overrides


def parse_override(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` -> (key, value). VALUE is TOML; anything else is a bare string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--config {text!r}: expected KEY=VALUE, e.g. --config arch=sm_100a")
    raw = raw.strip()
    try:
        parsed = tomllib.loads(f"value = {raw}")
    except tomllib.TOMLDecodeError:
        return key, raw
    if set(parsed) != {"value"}:  # "1\nother = 2" must not smuggle in a second key
        return key, raw
    return key, parsed["value"]


def _override_table(overrides: Iterable[str]) -> dict[str, Any]:
    """Raw table of the overrides; `confirm.timeout=30` becomes {"confirm": {"timeout": 30}}."""
    table: dict[str, Any] = {}
    for text in overrides:
        key, value = parse_override(text)
        # `_` is accepted for `-` on the command line (tk_version = tk-version).
        parts = [p.strip().replace("_", "-") for p in key.split(".")]
        if parts[0] == "confirm" and len(parts) == 2:
            table.setdefault("confirm", {})
            if not isinstance(table["confirm"], dict):
                table["confirm"] = {}
            table["confirm"][parts[1]] = value
        elif len(parts) == 1:
            if parts[0] == "confirm" and isinstance(value, dict) and isinstance(table.get("confirm"), dict):
                table["confirm"].update(value)
            else:
                table[parts[0]] = value
        else:
            raise ConfigError(f"--config {text!r}: unknown key '{key}'")
    return table


def with_overrides(config: Config, overrides: Iterable[str], *, cwd: Path | None = None) -> Config:
    """`config` with `--config KEY=VALUE` overrides applied (later ones win)."""
    table = _override_table(overrides)
    if not table:
        return config
    fields = _convert(table, "--config", Path(cwd) if cwd else Path.cwd())
    confirm = fields.pop("confirm", None)
    if confirm:
        fields["confirm"] = replace(config.confirm, **confirm)
    return replace(config, **fields)


def distrust(config: Config) -> Config:
    """`config` without the settings that run programs: `sass = true` (nvcc), `confirm.build`,
    `confirm.run` and `confirm.sanitizer-args` (what `tkcheck confirm` runs). A config file found in
    the checked repository is the repository's, not the user's: a cloned repository must not make
    a plain `tkcheck` (or the pre-commit hook) run a compiler or a command. The command line
    (`--sass`, `--config KEY=VALUE`, an explicit config file) and `--trust-config` are the user's."""
    dropped = []
    if config.sass:
        dropped.append("sass = true")
    for key, value in (
        ("confirm.build", config.confirm.build),
        ("confirm.run", config.confirm.run),
        ("confirm.sanitizer-args", config.confirm.sanitizer_args),
    ):
        if value:
            dropped.append(key)
    if not dropped:
        return config
    confirm = replace(config.confirm, build=None, run=None, sanitizer_args=())
    return replace(config, sass=None if config.sass else config.sass, confirm=confirm, untrusted=tuple(dropped))


def untrusted_note(config: Config) -> str | None:
    """The note telling which settings of a repository's config were not honoured, or None."""
    if not config.untrusted:
        return None
    return (
        f"{config.source}: {', '.join(config.untrusted)} not honoured: a repository's config file does not "
        "switch on compilation or commands (pass --trust-config, or give them on the command line)"
    )


def load_config(
    start: Path | None = None,
    *,
    config_file: Path | None = None,
    overrides: Iterable[str] = (),
    cwd: Path | None = None,
    trust: bool = True,
) -> Config:
    """The config for checking `start`: an explicit file, or the closest one found, plus overrides.

    `trust=False`: the file's settings that run programs are dropped (`distrust`); the overrides,
    given on the command line, always count."""
    cwd = Path(cwd) if cwd else Path.cwd()
    path = Path(config_file) if config_file is not None else find_config(Path(start) if start else cwd)
    config = read_config(path) if path is not None else Config()
    if not trust:
        config = distrust(config)
    return with_overrides(config, overrides, cwd=cwd)


__all__ = [
    "Config",
    "ConfirmConfig",
    "ConfigError",
    "find_config",
    "read_config",
    "load_config",
    "distrust",
    "untrusted_note",
    "with_overrides",
    "parse_override",
]
