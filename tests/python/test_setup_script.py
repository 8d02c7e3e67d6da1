"""scripts/setup.sh refuses a project folder whose path .venv cannot live in, before any work.

Two tools read characters of .venv's path as syntax. setuptools reads ``$name`` and
braces as variables: the editable install failed after 20 s with 40 lines ending in
``ValueError: invalid variable 'x'`` (clones in ``main $x`` and ``p{x}``). pip's launch
scripts (``.venv/bin/cdc``, ``dbt``) quote a path with a space in ``"..."`` for
``/bin/sh``: a clone in ``p$1 b`` set up, and then its ``dbt`` ran ``p b/.venv/bin/python``,
not found. Clones in ``main q'x`` (a space, a quote) and ``ünï cödé`` set up and ran the
demo. Each case runs a copy of the script with ``PYTHON=/bin/false``: a folder the script
takes gets as far as the Python check, so no case creates a virtual environment.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

SETUP_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "setup.sh"


def _run_setup_in(folder: Path) -> subprocess.CompletedProcess:
    (folder / "scripts").mkdir(parents=True)
    shutil.copy(SETUP_SCRIPT, folder / "scripts" / "setup.sh")
    return subprocess.run(
        ["bash", str(folder / "scripts" / "setup.sh")],
        env={"PATH": "/usr/bin:/bin", "PYTHON": "/bin/false"},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "name",
    ["main $x", "main ${x}", "main {x}", "main {", "main }", "p$1 b", "ends in $", "a`b", 'a"b', "a\\b", "a\nb"],
)
def test_a_folder_setuptools_or_pips_launch_scripts_read_as_syntax_is_refused(tmp_path, name):
    folder = tmp_path / name
    result = _run_setup_in(folder)
    assert result.returncode == 1
    assert result.stderr.startswith(f"setup: the project's folder {folder} holds "), result.stderr
    assert "clone the project into a folder without them" in result.stderr
    assert not (folder / ".venv").exists()


@pytest.mark.parametrize("name", ["main q'x", "ünï cödé"])
def test_spaces_quotes_and_non_ascii_letters_get_past_the_check(tmp_path, name):
    result = _run_setup_in(tmp_path / name)
    assert result.returncode == 1
    assert result.stderr.startswith("setup: Python 3.11 is required"), result.stderr
