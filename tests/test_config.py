"""Config discovery, parsing, overrides and error messages."""

from __future__ import annotations

import pathlib

import pytest

from tkcheck.config import (
    Config,
    ConfigError,
    ConfirmConfig,
    find_config,
    load_config,
    parse_override,
    read_config,
    with_overrides,
)


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


FULL = """
[tool.tkcheck]
select = ["TK3", "expect-tx-mismatch"]
ignore = ["TK305"]
extend-select = ["TK5"]
arch = "sm_100a"
tk-include = "third/tk/include"
include-dirs = ["inc", "/abs/inc"]
defines = ["NDEBUG", "STAGES=4"]
clang-args = ["-std=c++20"]
compile-commands = "build"
tk-version = "lane-guarded"
output-format = "sarif"
sass = true

[tool.tkcheck.per-file-ignores]
"tests/*.cu" = ["TK301"]
"legacy/**" = ["TK4", "TK5"]

[tool.tkcheck.confirm]
build = "make -C build"
run = ["./build/gemm", "--iters", "1"]
timeout = 30
sanitizer-args = "--tool racecheck --racecheck-report all"
"""


def test_pyproject_all_keys(tmp_path):
    path = write(tmp_path / "pyproject.toml", FULL)
    cfg = read_config(path)
    assert cfg.source == path
    assert cfg.root == tmp_path
    assert cfg.select == ("TK3", "expect-tx-mismatch")
    assert cfg.ignore == ("TK305",)
    assert cfg.extend_select == ("TK5",)
    assert cfg.per_file_ignores == (("tests/*.cu", ("TK301",)), ("legacy/**", ("TK4", "TK5")))
    assert cfg.arch == "sm_100a"
    assert cfg.tk_include == tmp_path / "third/tk/include"
    assert cfg.include_dirs == (tmp_path / "inc", pathlib.Path("/abs/inc"))
    assert cfg.defines == ("NDEBUG", "STAGES=4")
    assert cfg.clang_args == ("-std=c++20",)
    assert cfg.compile_commands == tmp_path / "build"
    assert cfg.tk_version == "lane-guarded"
    assert cfg.output_format == "sarif"
    assert cfg.sass is True
    assert cfg.confirm == ConfirmConfig(
        build="make -C build",
        run=("./build/gemm", "--iters", "1"),
        timeout=30.0,
        sanitizer_args=("--tool", "racecheck", "--racecheck-report", "all"),
    )
    hash(cfg)  # frozen and hashable: usable as a cache key


def test_defaults():
    cfg = Config()
    assert cfg.select == ("ALL",) and cfg.ignore == () and cfg.tk_version == "auto"
    assert cfg.source is None and cfg.root is None and cfg.confirm == ConfirmConfig()


def test_defines_as_table(tmp_path):
    path = write(tmp_path / "tkcheck.toml", "defines = { NDEBUG = true, STAGES = 4, NAME = 'x' }\n")
    assert read_config(path).defines == ("NDEBUG", "STAGES=4", "NAME=x")


def test_closest_file_wins_and_bare_pyproject_does_not_count(tmp_path):
    write(tmp_path / "tkcheck.toml", 'arch = "sm_90a"\n')
    write(tmp_path / "proj" / "pyproject.toml", '[tool.tkcheck]\narch = "sm_100a"\n')
    write(tmp_path / "proj" / "sub" / "pyproject.toml", '[project]\nname = "x"\n')
    kernel = write(tmp_path / "proj" / "sub" / "k.cu", "")
    assert find_config(kernel) == tmp_path / "proj" / "pyproject.toml"
    assert load_config(kernel).arch == "sm_100a"
    other = write(tmp_path / "other" / "k.cu", "")
    assert load_config(other).arch == "sm_90a"
    assert load_config(other).source == tmp_path / "tkcheck.toml"


def test_tkcheck_toml_beats_pyproject_in_same_folder(tmp_path):
    write(tmp_path / "tkcheck.toml", 'arch = "sm_90a"\n')
    write(tmp_path / "pyproject.toml", '[tool.tkcheck]\narch = "sm_100a"\n')
    assert find_config(tmp_path) == tmp_path / "tkcheck.toml"


def test_no_config_found_gives_defaults(tmp_path):
    cfg = load_config(tmp_path / "k.cu", cwd=tmp_path)
    # The search walks up past tmp_path; whatever it finds there is not ours, so
    # only check the case where nothing above has a tkcheck table.
    if cfg.source is None:
        assert cfg == Config()


def test_explicit_config_file(tmp_path):
    path = write(tmp_path / "cfg" / "tkcheck.toml", 'tk-include = "../tk"\n')
    cfg = load_config(config_file=path)
    assert cfg.tk_include == tmp_path / "cfg" / ".." / "tk"
    with pytest.raises(ConfigError, match="no \\[tool.tkcheck\\] table"):
        read_config(write(tmp_path / "pyproject.toml", "[project]\n"))


def test_overrides(tmp_path):
    base = read_config(
        write(tmp_path / "tkcheck.toml", FULL.replace("tool.tkcheck.", "").replace("[tool.tkcheck]\n", ""))
    )
    cfg = with_overrides(
        base,
        [
            "arch=sm_90a",  # bare string
            "select=['TK1', 'TK2']",  # TOML array
            "ignore=TK301,TK302",  # comma list
            "sass=false",
            "confirm.timeout=5",
            "tk_include=tk",  # underscore spelling; relative to the cwd
            "confirm={run = 'x'}",  # merges into [confirm]
        ],
        cwd=tmp_path / "here",
    )
    assert cfg.arch == "sm_90a"
    assert cfg.select == ("TK1", "TK2")
    assert cfg.ignore == ("TK301", "TK302")
    assert cfg.sass is False
    assert cfg.confirm.timeout == 5.0 and cfg.confirm.run == "x"
    assert cfg.confirm.build == "make -C build"
    assert cfg.tk_include == tmp_path / "here" / "tk"
    assert cfg.source == base.source


def test_parse_override():
    assert parse_override("timeout = 30") == ("timeout", 30)
    assert parse_override("arch=sm_100a") == ("arch", "sm_100a")
    assert parse_override('x="a=b"') == ("x", "a=b")
    assert parse_override("x=1\ny = 2") == ("x", "1\ny = 2")
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_override("arch")


@pytest.mark.parametrize(
    "text, message",
    [
        ("slect = ['TK3']", "unknown key 'slect' \\(did you mean 'select'\\?\\)"),
        ("arch = 'sm_80'", "'arch' must be one of 'sm_90a', 'sm_100a', got string 'sm_80'"),
        ("select = [1, 2]", "'select' must be a list of strings, got array"),
        ("sass = 'yes'", "'sass' must be true or false"),
        ("tk-version = 'new'", "'tk-version' must be one of 'auto', 'thread-scope', 'lane-guarded'"),
        ("output-format = 'xml'", "'output-format' must be one of"),
        ("per-file-ignores = ['a']", "'per-file-ignores' must be a table"),
        ("confirm = 3", "'confirm' must be a table"),
        ("[confirm]\ntimeout = -1", "'confirm.timeout' must be a positive number"),
        ("[confirm]\ntimeout = true", "'confirm.timeout' must be a positive number"),
        ("[confirm]\nbiuld = 'make'", "unknown key 'confirm.biuld' \\(did you mean 'confirm.build'\\?\\)"),
        ("[tool.tkcheck]\narch = 'sm_90a'", "unknown key 'tool' \\(tkcheck.toml holds the keys"),
        ("defines = { X = [1] }", "'defines.X' must be true, a number or a string"),
        ("clang-args = \"-I'unbalanced\"", "cannot split"),
        ("arch = ", "invalid TOML"),
    ],
)
def test_errors_are_config_errors(tmp_path, text, message):
    path = write(tmp_path / "tkcheck.toml", text + "\n")
    with pytest.raises(ConfigError, match=message) as info:
        read_config(path)
    if "invalid TOML" not in message:
        assert str(path) in str(info.value)


def test_unreadable_and_non_utf8(tmp_path):
    path = tmp_path / "tkcheck.toml"
    path.write_bytes(b"arch = '\xff'\n")
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        read_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        read_config(tmp_path / "missing" / "tkcheck.toml")
    bad = write(tmp_path / "p" / "pyproject.toml", "[tool\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        find_config(bad.parent)


def test_override_errors(tmp_path):
    with pytest.raises(ConfigError, match="--config: unknown key 'nope'"):
        with_overrides(Config(), ["nope=1"])
    with pytest.raises(ConfigError, match="unknown key 'a.b.c'"):
        with_overrides(Config(), ["a.b.c=1"])
    with pytest.raises(ConfigError, match="'arch' must be"):
        with_overrides(Config(), ["arch=3"])
