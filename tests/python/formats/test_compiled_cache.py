"""Where ``udfs.formats.compiled`` caches its loops when numba finds no writable
folder of its own: a read-only install run by a user without a writable home, as on
some cluster executors. numba then refuses ``cache=True`` at decoration time, which
would make every decoder fail to import.

Each case runs in its own process (numba's choice is made at import), with numba's
folder check refusing every folder but the ones a case allows: the tests run as root
in CI, for whom no folder is read-only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import json, os, sys, warnings
from numba.core import caching

writable = os.environ.get("PROBE_WRITABLE")
real_check = caching._CacheLocator.ensure_cache_path


def refusing_check(self):
    path = self.get_cache_path()
    if not writable or not os.path.abspath(path).startswith(writable):
        raise PermissionError(13, "Permission denied", path)
    real_check(self)


caching._CacheLocator.ensure_cache_path = refusing_check
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import numpy as np
    from udfs.formats import compiled

    offs, out = compiled.gather_spans(
        np.frombuffer("ab\u00e9cd".encode(), dtype=np.uint8), np.array([1, 0]), np.array([4, 1])
    )
print(json.dumps({
    "uncached": compiled.UNCACHED,
    "cache_dir": compiled.numba_config.CACHE_DIR,
    "gathered": bytes(out).decode(),
    "offsets": offs.tolist(),
    "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)],
}))
"""


def probe(tmp_path: Path, writable: Path | None) -> dict:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "PROBE_WRITABLE": str(writable or ""),
    }
    (tmp_path / "tmp").mkdir(exist_ok=True)
    p = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_cache_moves_to_the_temp_folder_when_no_other_is_writable(tmp_path: Path) -> None:
    got = probe(tmp_path, writable=tmp_path / "tmp")
    assert got["uncached"] == [] and got["warnings"] == []
    assert got["gathered"] == "b\u00e9a" and got["offsets"] == [0, 3, 4]
    cache_dir = Path(got["cache_dir"])
    assert cache_dir.parent == tmp_path / "tmp" and cache_dir.name.startswith("cdc-numba-cache-")
    # the loop that ran was written to the cache: a later process loads it
    assert any(p.name.startswith("compiled._gather") for p in cache_dir.rglob("*.nbi"))


def test_loops_compile_uncached_with_one_warning_when_nothing_is_writable(tmp_path: Path) -> None:
    got = probe(tmp_path, writable=None)
    assert got["gathered"] == "b\u00e9a" and got["offsets"] == [0, 3, 4]
    assert "_gather" in got["uncached"] and "_scan" in got["uncached"]
    assert len(got["warnings"]) == 1 and "no writable cache folder" in got["warnings"][0]
    assert not list((tmp_path / "tmp").rglob("*.nbi"))
