"""The rule catalog and the command line import under the wheel's names from a source checkout
too, through the mapping pyproject.toml gives setuptools (tkcheck/_source_layout.py)."""

import subprocess
import sys

from conftest import ROOT

from tkcheck import _source_layout


def test_the_mapping_is_read_from_pyproject():
    assert _source_layout.package_dirs(ROOT) == {"tkcheck.rules": ROOT / "rules", "tkcheck.cli": ROOT}


def test_a_missing_folder_or_table_maps_nothing(tmp_path):
    assert _source_layout.package_dirs(tmp_path) == {}
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"tkcheck.rules" = "rules"\n')
    assert _source_layout.package_dirs(tmp_path) == {}
    (tmp_path / "rules").mkdir()
    assert _source_layout.package_dirs(tmp_path) == {"tkcheck.rules": tmp_path / "rules"}


def test_source_checkout_imports_the_mapped_packages_only(tmp_path):
    code = (
        "import importlib.util, tkcheck.rules, tkcheck.cli.cli, tkcheck.rules._common as c; "
        "print(tkcheck.rules.__file__); print(tkcheck.cli.cli.__file__); print(c.__name__); "
        "print(importlib.util.find_spec('tkcheck.scripts'), importlib.util.find_spec('tkcheck.tests'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out == [str(ROOT / "rules" / "__init__.py"), str(ROOT / "cli.py"), "tkcheck.rules._common", "None None"]
