"""deploy/ as an operator installs it: the systemd units pass `systemd-analyze verify`,
score 4 or below (of 10) in `systemd-analyze security` and start commands hangar has, the
nginx site passes `nginx -t`, and the EnvironmentFile example lists exactly hangar's
settings, with a placeholder key hangar refuses. (The topology itself runs in
test_scale_out.py, the nginx site's own answers in test_nginx_site.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import trustme
from scripts.scratch import free_port

from hangar.cli.processes import environment
from hangar.foundation.config import ConfigError, Settings, load_settings
from tests.fixtures.deploy import (
    DEPLOY,
    NGINX,
    SYSTEMD_ANALYZE,
    UNITS,
    environment_settings,
    exec_start,
    nginx_argv,
    nginx_config,
    rendered_unit,
)
from tests.fixtures.environment import SECRET

ENTRY_POINT = Path(sys.executable).with_name("hangar")
MOST_EXPOSED = 4.0  # systemd-analyze security's exposure level, out of 10
INSTANCES = {
    "hangar-migrate.service": "hangar-migrate.service",
    "hangar-serve@.service": "hangar-serve@8001.service",
    "hangar-worker@.service": "hangar-worker@1.service",
    "hangar-backup.service": "hangar-backup.service",
}


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
def test_the_units_pass_systemd_analyze_verify(tmp_path: Path, repo_root: Path) -> None:
    for name in UNITS:
        (tmp_path / name).write_text(rendered_unit(name, ENTRY_POINT, repo_root))
    # The timer, beside the service it starts.
    (tmp_path / "hangar-backup.timer").write_text((DEPLOY / "hangar-backup.timer").read_text())
    units = [str(tmp_path / INSTANCES[n]) for n in UNITS] + [str(tmp_path / "hangar-backup.timer")]
    checked = subprocess.run(  # noqa: S603
        [SYSTEMD_ANALYZE or "", "verify", *units],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Warnings (an unknown key, a misspelt section) do not fail verify: no output at all.
    assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("unit", UNITS)
def test_each_unit_scores_at_most_4_in_systemd_analyze_security(unit: str) -> None:
    # The file as installed (no machine's systemd needed: --offline), scored out of 10
    # (lower is safer; release 1.2.0's units scored 8.5 and 9.2).
    scored = subprocess.run(  # noqa: S603
        [SYSTEMD_ANALYZE or "", "security", "--offline=yes", "--no-pager", str(DEPLOY / unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", scored.stdout)
    assert found, scored.stdout + scored.stderr
    open_ = [line for line in scored.stdout.splitlines() if line.startswith("✗")]
    assert float(found[1]) <= MOST_EXPOSED, "\n".join(open_)


@pytest.mark.parametrize(
    "unit", ["hangar-serve@.service", "hangar-worker@.service", "hangar-backup.service"]
)
def test_the_units_start_commands_hangar_has(unit: str, repo_root: Path) -> None:
    argv = exec_start(rendered_unit(unit, ENTRY_POINT, repo_root))
    argv = [arg.replace("%i", "8001") for arg in argv]
    # click parses every option before --help answers: one hangar lacks is an error.
    done = subprocess.run(  # noqa: S603
        [*argv, "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed (.ci/run installs it)")
def test_the_nginx_site_passes_nginx_t(tmp_path: Path, ca: trustme.CA) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    issued = ca.issue_cert("127.0.0.1")
    issued.private_key_pem.write_to_path(str(key))
    issued.cert_chain_pems[0].write_to_path(str(cert))
    conf = nginx_config(tmp_path, free_port(), [free_port(), free_port()], cert, key)
    checked = subprocess.run(  # noqa: S603
        nginx_argv(tmp_path, conf, "-t"), capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 0, checked.stderr


def test_the_environment_file_lists_exactly_hangars_settings() -> None:
    every = Settings(
        database_url="postgresql://hangar@db/hangar",
        secret_key=SECRET,
        previous_secret_keys=("p" * 32,),
        redis_url="redis://r",
        metrics_token="m" * 32,
        smtp_url="smtps://mail.example.org",
        mail_from="hangar@example.org",
    )
    assert sorted(environment_settings()) == sorted(environment(every))


def test_hangar_refuses_the_environment_files_placeholder_key() -> None:
    example = (DEPLOY / "hangar.env.example").read_text().splitlines()
    values = dict(
        line.split("=", 1) for line in example if line.startswith("HANGAR_") and "=" in line
    )
    with pytest.raises(ConfigError, match="HANGAR_SECRET_KEY"):
        load_settings(values)
