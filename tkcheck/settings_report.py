"""`tkcheck --show-settings FILE`: the settings that apply to one file, and where each comes from.

Each setting is one of: the command line (an option such as `--arch`), a `--config KEY=VALUE`
override, the config file that applies to FILE (the closest `tkcheck.toml` or `pyproject.toml`
with `[tool.tkcheck]`, or `--config-file`), or tkcheck's default. The values shown are the ones the
check of FILE uses: the rules left after select/ignore/per-file-ignores, the parse options after
compile_commands.json and `-I` folders holding ThunderKittens are sorted out.
"""

from __future__ import annotations

import json
from typing import Any

from .config import Config, ConfigError, _override_table, _table_of

# config key -> (Config field, the _Settings field of the command-line option, or None)
_KEYS: tuple[tuple[str, str, str | None], ...] = (
    ("select", "select", "select"),
    ("ignore", "ignore", "ignore"),
    ("extend-select", "extend_select", "extend_select"),
    ("per-file-ignores", "per_file_ignores", "per_file_ignores"),
    ("arch", "arch", "arch"),
    ("tk-include", "tk_include", "tk_include"),
    ("include-dirs", "include_dirs", "include_dirs"),
    ("defines", "defines", "defines"),
    ("clang-args", "clang_args", None),
    ("compile-commands", "compile_commands", "compile_commands"),
    ("tk-version", "tk_version", "tk_version"),
    ("output-format", "output_format", None),
    ("sass", "sass", "sass"),
    ("baseline", "baseline", None),
    ("require-coverage", "require_coverage", None),
    ("exclude", "exclude", "exclude"),
    ("extend-exclude", "extend_exclude", "extend_exclude"),
    ("respect-gitignore", "respect_gitignore", "respect_gitignore"),
)


def _given(value: Any) -> bool:
    return value is not None and value != () and value != []


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        # exclusion globs are (glob, folder) pairs: show the glob and its folder
        return [_plain(v) for v in value]
    if hasattr(value, "__fspath__"):
        return str(value)
    return value


def origins(config: Config, settings: Any, overrides: tuple[str, ...]) -> dict[str, str]:
    """config key -> "command line" | "--config" | the config file | "default"."""
    try:
        in_file = set(_table_of(config.source) or {}) if config.source is not None else set()
        in_overrides = set(_override_table(overrides))
    except ConfigError:
        in_file, in_overrides = set(), set()
    out = {}
    for key, _, option in _KEYS:
        if option is not None and _given(getattr(settings, option, None)):
            out[key] = "command line"
        elif key in in_overrides:
            out[key] = "--config"
        elif key in in_file:
            out[key] = str(config.source)
        else:
            out[key] = "default"
    return out


def settings_text(target: str, config: Config, opts: Any, settings: Any, overrides: tuple[str, ...], excl: Any) -> str:
    """The report: `key = value  # origin` lines (values in TOML/JSON spelling), then what the
    check of `target` resolves them to."""
    where = origins(config, settings, tuple(overrides))
    lines = [
        f"# settings for {target}",
        f"# config file: {config.source if config.source is not None else '(none: defaults)'}",
    ]
    for key, attr, option in _KEYS:
        origin = where[key]
        value = getattr(settings, option) if origin == "command line" and option else getattr(config, attr)
        if key in ("exclude", "extend-exclude") and origin != "command line" and value is not None:
            value = tuple(glob for glob, _ in value)  # each relative to its file's folder (below)
        shown = json.dumps(_plain(value), default=str) if value is not None else "(unset)"
        lines.append(f"{key} = {shown}  # {origin}")
    lines.append("")
    lines.append("# resolved for this file")
    lines.append(f"rules = {json.dumps(sorted(opts.enabled))}")
    p = opts.parse
    lines.append(
        f"arch = {json.dumps(p.arch)}{'  # decided per file when a kernel needs sm_100a' if p.arch_auto else ''}"
    )
    lines.append(f"tk-include = {json.dumps(p.tk_include)}")
    lines.append(f"tk-extra-dirs = {json.dumps(list(p.tk_extra_dirs))}")
    lines.append(f"include-dirs = {json.dumps(list(p.include_dirs))}")
    lines.append(f"defines = {json.dumps(list(p.defines))}")
    lines.append(f"clang-args = {json.dumps(list(p.clang_args))}")
    lines.append(f"sass = {json.dumps(opts.sass)}")
    lines.append(
        "exclude-patterns = "
        + json.dumps([{"glob": x.text, "relative-to": x.base, "from": x.source} for x in excl.patterns])
    )
    lines.append(f"respect-gitignore = {json.dumps(excl.respect_gitignore)}")
    return "\n".join(lines) + "\n"


__all__ = ["origins", "settings_text"]
