"""Settings every test process shares (and passes on to the processes it starts).

Ray (2.60) switches token authentication on for a local instance that `ray.init()` starts, records it in
this process's environment (RAY_AUTH_MODE=token) and keeps the mode for later connections of the same
process. Tests that start a local instance (the accelerator search's and the oracle's executor tests) and
the test that starts a two-node cluster (tests/cli/test_ray_cluster.py, without authentication) share a
pytest-xdist worker in some orders; a later connection then failed (no token for a new instance, or the
cluster's workers unable to reach the driver: OwnerDiedError). The tests' Ray runs on this machine only,
without authentication.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

os.environ["RAY_AUTH_MODE"] = "disabled"

# Servers and CLIs the tests start in a temporary folder must run this checkout's code: a relative
# `PYTHONPATH=server` (how a worktree runs its tests) resolves from the child's working folder, not from
# here, and the child then imports the venv's installed `adopter` (an editable install of another checkout).
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A `pure_python` test under the native build: compiled (mypyc) methods cannot be patched and compiled
    callers bypass patched attributes, so the test runs again in a fresh interpreter on the pure-Python
    modules (`ADOPTER_NATIVE=0`), and passes only if it passes there."""
    if pyfuncitem.get_closest_marker("pure_python") is None:
        return None
    from adopter import _native

    if not _native.state["active"]:
        return None
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", pyfuncitem.nodeid],
                          cwd=pyfuncitem.config.rootpath, env={**os.environ, "ADOPTER_NATIVE": "0"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return True
