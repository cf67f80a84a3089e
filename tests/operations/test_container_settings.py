"""Settings a container platform needs (issue 40): HANGAR_DB_POOL_SIZE sizes each process's
pools, and the settings that hold secrets can come from files (HANGAR_SECRET_KEY_FILE and the
like, as Kubernetes and Docker mount secrets), never both ways at once, and a file that cannot
be read stops the process with one line that names it and never its content."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.cli.processes import environment
from hangar.foundation.config import FILE_SETTINGS, ConfigError, load_settings
from hangar.wiring.container import build_services
from tests.fixtures.environment import SECRET

KEY = "a-key-read-from-a-file-" + "f" * 30


def base(tmp_path: Path) -> dict[str, str]:
    return {"HANGAR_DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}


@pytest.mark.parametrize(("value", "size"), [(None, 10), ("", 10), ("1", 1), (" 25 ", 25)])
async def test_the_pool_size_sizes_each_process_pool(
    tmp_path: Path, value: str | None, size: int
) -> None:
    env = base(tmp_path) | ({"HANGAR_DB_POOL_SIZE": value} if value is not None else {})
    settings = load_settings(env)
    assert settings.db_pool_size == size
    services = build_services(settings)
    try:
        assert services.engine.pool.size() == size  # type: ignore[attr-defined]
    finally:
        await services.close()
    # `serve --workers N` hands its processes the same size.
    assert load_settings(environment(settings)).db_pool_size == size


@pytest.mark.parametrize("value", ["0", "101", "-1", "1.5", "ten"])
def test_a_pool_size_out_of_range_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(base(tmp_path) | {"HANGAR_DB_POOL_SIZE": value})
    assert str(refused.value) == (
        f"HANGAR_DB_POOL_SIZE must be a whole number from 1 to 100, not {value!r}"
    )


def test_each_secret_setting_can_come_from_a_file(tmp_path: Path) -> None:
    values = {
        "HANGAR_DATABASE_URL": f"sqlite:///{tmp_path}/from-file.db",
        "HANGAR_REDIS_URL": "redis://:pw@127.0.0.1:6379/0",
        "HANGAR_SECRET_KEY": KEY,
        "HANGAR_SECRET_KEY_PREVIOUS": SECRET,
        "HANGAR_METRICS_TOKEN": "m" * 40,
        "HANGAR_SMTP_URL": "smtps://user:pw@mail.example.org:465",
    }
    assert sorted(values) == sorted(FILE_SETTINGS)
    env = {"HANGAR_MAIL_FROM": "hangar@example.org"}
    for name, value in values.items():
        path = tmp_path / name.lower()
        path.write_text(f"{value}\n")  # as `echo` and most editors leave it
        env[f"{name}_FILE"] = str(path)
    settings = load_settings(env)
    assert settings.database_url == values["HANGAR_DATABASE_URL"]
    assert settings.redis_url == values["HANGAR_REDIS_URL"]
    assert settings.secret_key == KEY
    assert settings.previous_secret_keys == (SECRET,)
    assert settings.metrics_token == values["HANGAR_METRICS_TOKEN"]
    assert settings.smtp_url == values["HANGAR_SMTP_URL"]


def test_a_setting_and_its_file_together_or_a_bad_file_are_refused_in_one_line(
    tmp_path: Path,
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    both = base(tmp_path) | {"HANGAR_SECRET_KEY": KEY, "HANGAR_SECRET_KEY_FILE": str(key_file)}
    missing = base(tmp_path) | {"HANGAR_SECRET_KEY_FILE": str(tmp_path / "nowhere")}
    empty_file = tmp_path / "empty"
    empty_file.write_text(" \n")
    empty = base(tmp_path) | {"HANGAR_SECRET_KEY_FILE": str(empty_file)}
    binary_file = tmp_path / "binary"
    binary_file.write_bytes(b"\xff\xfe" + KEY.encode())
    binary = base(tmp_path) | {"HANGAR_SECRET_KEY_FILE": str(binary_file)}
    refusals = []
    for env in (both, missing, empty, binary):
        with pytest.raises(ConfigError) as refused:
            load_settings(env)
        refusals.append(str(refused.value))
    assert refusals == [
        "HANGAR_SECRET_KEY and HANGAR_SECRET_KEY_FILE are both set: keep one of them",
        f"HANGAR_SECRET_KEY_FILE: cannot read {tmp_path / 'nowhere'}: No such file or directory",
        f"HANGAR_SECRET_KEY_FILE: {empty_file} is empty",
        f"HANGAR_SECRET_KEY_FILE: cannot read {binary_file}: not UTF-8 text",
    ]
    assert not any(KEY in refusal for refusal in refusals)
