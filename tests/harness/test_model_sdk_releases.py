"""The model adapters on the SDK releases the lock does not pin, not only the one it does.

An SDK release can change how it reports the same event: ``anthropic`` 2.17
wraps a body cut mid-reply as a connection error, 2.16 lets its HTTP stack's
own error through. Each release named in requirements/sdk-releases.lock is
installed alone (scripts/test puts it in ``$AMV_SDK_RELEASES/<name>-<version>``)
and the adapter's own tests run again with it in front of everything else, in
a process of their own: same wire server, same assertions.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.cli_process import run_process, succeeded

ROOT = Path(__file__).resolve().parents[2]
RELEASES = Path(os.environ.get("AMV_SDK_RELEASES", ROOT / ".cache" / "sdk-releases"))
LOCK = ROOT / "requirements" / "sdk-releases.lock"

# Which tests cover each SDK's adapter.
ADAPTER_TESTS = {"anthropic": "tests/harness/test_anthropic_model.py"}


def pinned() -> list[str]:
    """``name-version`` of each release in the lock."""
    lines = LOCK.read_text().splitlines()
    return [line.split()[0].replace("==", "-") for line in lines if "==" in line.split(" ")[0]]


@pytest.mark.slow
@pytest.mark.parametrize("release", pinned())
def test_the_adapter_tests_pass_on_another_release_of_its_sdk(release: str) -> None:
    folder = RELEASES / release
    if not (folder / ".amv-installed").exists():
        pytest.skip(f"{release} is not installed in {RELEASES}: scripts/test installs it")
    name, version = release.rsplit("-", 1)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
    seen = succeeded(
        run_process([sys.executable, "-c", f"import {name}; print({name}.__version__)"], env=env)
    )
    assert seen.stdout.strip() == version  # the release under test, not the lock's
    run = run_process(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", ADAPTER_TESTS[name]],
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
