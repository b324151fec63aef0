"""``doctor`` asks the real Codex whether it trusts the installed session hook.

Codex runs only hooks whose ``trusted_hash`` matches the hook as it reads it;
a hook edited after ``install`` recorded the trust is skipped. ``doctor`` gets
Codex's own verdict (``hooks/list``) and says the one command that fixes it.
"""

from __future__ import annotations

import json

import pytest

from .conftest import CLI, World, client

pytestmark = pytest.mark.slow


def test_doctor_reports_a_codex_hook_whose_trust_no_longer_matches(world: World) -> None:
    client("codex")
    world.amv("init")
    world.amv("install", "codex")
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert doctor.returncode == 0, f"{doctor.stdout}\n{doctor.stderr}"
    assert "No problems found." in doctor.stdout

    # An edit to the hook (here its timeout) changes the hash Codex checks.
    hooks = world.home / ".codex" / "hooks.json"
    data = json.loads(hooks.read_text())
    data["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] = 11
    hooks.write_text(json.dumps(data))
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert doctor.returncode == 7, doctor.stdout
    lines = [x for x in doctor.stdout.splitlines() if x.startswith("install: ")]
    assert len(lines) == 1, doctor.stdout
    assert f"Codex will not run the session hook in {hooks}: it is modified" in lines[0]
    assert "run 'agent-mem-vault install codex'" in lines[0]

    world.amv("install", "codex")
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert doctor.returncode == 0, f"{doctor.stdout}\n{doctor.stderr}"


def test_doctor_reports_a_codex_hook_codex_does_not_see(world: World) -> None:
    client("codex")
    world.amv("init")
    world.amv("install", "codex")
    config = world.home / ".codex" / "config.toml"
    config.write_text(config.read_text().replace("hooks = true", "hooks = false"))
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert doctor.returncode == 7, doctor.stdout
    lines = [x for x in doctor.stdout.splitlines() if x.startswith("install: ")]
    assert lines == [
        f"install: Codex does not see the session hook in {world.home / '.codex' / 'hooks.json'} "
        f"(is [features] hooks turned off in {config}?); run 'agent-mem-vault install codex'"
    ], doctor.stdout
    world.amv("install", "codex")
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert doctor.returncode == 0, f"{doctor.stdout}\n{doctor.stderr}"
