"""A sound result cache: keyed on every file the parse read and every option, never storing an
inconclusive run, validating every entry, reading only regular files inside its folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tkcheck.cli.cli import main

KERNEL = """\
#include "kittens.cuh"
#include "counts.h"
using namespace kittens;
__global__ __launch_bounds__(384, 1) void per_warp(int k_tiles) {
    __shared__ semaphore empty[4];
    if (threadIdx.x == 0) for (int s = 0; s < 4; s++) init_semaphore(empty[s], ARRIVERS, 0);
    __syncthreads();
    if (warpgroup::groupid() > 0) {
        for (int k = 0; k < k_tiles; k++) {
            if (laneid() == 0) arrive(empty[k % 4]);
        }
    } else if (threadIdx.x == 0) {
        for (int k = 0; k < k_tiles; k++) wait(empty[k % 4], ((k / 4) % 2) ^ 1);
    }
}
"""
HANG_GUARD_S = 240  # well above tkcheck's own --file-timeout below: load is not a hang


def run(args, cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["--select", "TK302", "--timing", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


def from_cache(r) -> bool:
    return "(1 from cache)" in r.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "tkcheck.toml").write_text("")
    (tmp_path / "counts.h").write_text("#pragma once\nconstexpr int ARRIVERS = 8;\n")
    (tmp_path / "k.cu").write_text(KERNEL)
    return tmp_path


def entries(project: Path, kind: str = "results") -> list[Path]:
    return sorted((project / ".tkcheck_cache" / kind).glob("*.json"))


def test_a_header_edit_invalidates(project):
    first = run(["k.cu"], project)
    assert first.exit_code == 0 and not from_cache(first), first.output
    again = run(["k.cu"], project)
    assert again.exit_code == 0 and from_cache(again)
    (project / "counts.h").write_text("#pragma once\nconstexpr int ARRIVERS = 9;\n")
    edited = run(["k.cu"], project)
    assert not from_cache(edited)
    assert edited.exit_code == 1 and "[TK302]" in edited.stdout, edited.output
    assert edited.stdout == run(["--no-cache", "k.cu"], project).stdout


def test_a_new_header_that_shadows_the_old_one_invalidates(project):
    (project / "inc").mkdir()
    (project / "counts.h").rename(project / "inc" / "counts.h")
    args = ["--config", 'include-dirs=["inc"]', "k.cu"]
    assert run(args, project).exit_code == 0
    assert from_cache(run(args, project))
    # the includer's own folder is searched first: this one now wins
    (project / "counts.h").write_text("#pragma once\nconstexpr int ARRIVERS = 9;\n")
    r = run(args, project)
    assert not from_cache(r) and r.exit_code == 1 and "[TK302]" in r.stdout, r.output


def test_options_are_in_the_key(project):
    assert run(["k.cu"], project).exit_code == 0
    for extra in (
        ["--config", 'defines=["UNUSED=1"]'],
        ["--arch", "sm_100a"],
        ["--solver-budget", "123456"],
        ["--show-unknown"],
        ["--select", "TK3"],
    ):
        assert not from_cache(run([*extra, "k.cu"], project)), extra


def test_a_missing_include_is_not_stored(project):
    (project / "counts.h").unlink()
    r = run(["--select", "TK000", "k.cu"], project)
    assert r.exit_code == 2 and "counts.h" in r.output
    assert not from_cache(run(["--select", "TK000", "k.cu"], project))
    (project / "counts.h").write_text("#pragma once\nconstexpr int ARRIVERS = 8;\n")
    assert run(["k.cu"], project).exit_code == 0


def test_an_inconclusive_run_is_not_stored(project):
    args = ["--solver-budget", "1", "--select", "TK3,TK5", "k.cu"]
    r = run(args, project)
    assert r.exit_code == 0
    assert not entries(project)  # nothing stored
    assert not from_cache(run(args, project))


def _one_entry(project: Path) -> Path:
    found = entries(project)
    assert len(found) == 1, found
    return found[0]


def _make_bad(project):
    (project / "counts.h").write_text("#pragma once\nconstexpr int ARRIVERS = 9;\n")
    r = run(["k.cu"], project)
    assert r.exit_code == 1
    return _one_entry(project), r.stdout


def test_an_edited_entry_is_not_trusted_and_is_replaced(project):
    entry, expected = _make_bad(project)
    data = json.loads(entry.read_text())
    data["payload"]["findings"] = []  # "no findings" -- without the checksum
    entry.write_text(json.dumps(data))
    r = run(["k.cu"], project)
    assert not from_cache(r) and r.exit_code == 1 and r.stdout == expected
    assert json.loads(entry.read_text())["payload"]["findings"]  # replaced by a good entry
    assert from_cache(run(["k.cu"], project))


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xff garbage",
        b"[1, 2]",
        b'{"schema": 2}',
        "notes-null",
        "row-not-int",
        "extra-field",
    ],
)
def test_a_corrupt_entry_is_ignored(project, content):
    entry, expected = _make_bad(project)
    if isinstance(content, str):  # well-formed, authenticated with the user's key, but the wrong types inside
        from tkcheck import cache_io

        data = json.loads(entry.read_text())
        payload = data["payload"]
        if content == "notes-null":
            payload["notes"] = None
        elif content == "row-not-int":
            payload["findings"][0]["location"]["row"] = "x"
        else:
            payload["findings"][0]["injected"] = 1
        data["mac"] = cache_io.mac(cache_io._canonical(data["kind"], data["key"], payload))
        entry.write_text(json.dumps(data))
    else:
        entry.write_bytes(content)
    r = run(["k.cu"], project)
    assert r.exit_code == 1 and r.stdout == expected, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output


def _subprocess(args, cwd):
    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    try:
        p = subprocess.run(
            [sys.executable, "-m", "tkcheck", "--select", "TK302", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=HANG_GUARD_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"tkcheck hung on a special cache entry (no answer in {HANG_GUARD_S} s)")
    return p.returncode, p.stdout.decode(), p.stderr.decode()


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs, /dev/zero")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-to-a-file"])
def test_a_special_entry_is_not_read(project, kind):
    entry, expected = _make_bad(project)
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", entry)
    else:
        outside = project / "outside.json"
        outside.write_text("{}")
        os.symlink(outside, entry)
    rc, out, err = _subprocess(["k.cu"], project)
    assert rc == 1 and out == expected, out + err
    assert entry.is_file() and not entry.is_symlink()  # replaced by a regular entry
    if kind == "link-to-a-file":
        assert (project / "outside.json").read_text() == "{}"


def test_a_linked_cache_folder_is_not_used(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.symlink(elsewhere, project / ".tkcheck_cache")
    assert run(["k.cu"], project).exit_code == 0
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
