"""With no secret key set outside production, one random secret per install, kept in a file."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys

import pytest

from app.config import PLACEHOLDER_SECRET, ROOT, Settings
from app.main import create_app
from tests.conftest import make_settings


@pytest.fixture(autouse=True)
def _no_secret_in_the_environment(monkeypatch):
    monkeypatch.delenv("RANKLAB_SECRET_KEY", raising=False)


def without_secret(**values: object) -> Settings:
    """Settings as `make run` has them: development, no RANKLAB_SECRET_KEY."""
    return Settings(environment="development", **values)  # type: ignore[arg-type]


def test_starts_in_one_state_folder_share_one_secret_that_is_not_the_placeholder(tmp_path):
    first, second = without_secret(state_dir=tmp_path), without_secret(state_dir=tmp_path)
    assert first.secret_key == second.secret_key
    assert first.secret_key != PLACEHOLDER_SECRET and len(first.secret_key) >= 40
    assert (tmp_path / "secret-key").read_text().strip() == first.secret_key


def test_another_install_gets_another_secret(tmp_path):
    here = without_secret(state_dir=tmp_path / "here")
    there = without_secret(state_dir=tmp_path / "there")
    assert here.secret_key != there.secret_key


def test_the_secret_file_is_readable_by_its_owner_only(tmp_path):
    without_secret(state_dir=tmp_path)
    assert stat.S_IMODE((tmp_path / "secret-key").stat().st_mode) == 0o600


def test_the_placeholder_or_an_empty_secret_means_none_set(tmp_path):
    for unset in (PLACEHOLDER_SECRET, ""):
        settings = without_secret(state_dir=tmp_path, secret_key=unset)
        assert settings.secret_key == (tmp_path / "secret-key").read_text().strip()


def test_a_secret_that_is_set_is_used_and_no_file_is_made(tmp_path):
    assert without_secret(state_dir=tmp_path, secret_key="my own secret").secret_key == (
        "my own secret"
    )
    assert not (tmp_path / "secret-key").exists()


def test_production_refuses_to_start_without_a_secret(tmp_path):
    for unset in (PLACEHOLDER_SECRET, ""):
        with pytest.raises(ValueError, match="RANKLAB_SECRET_KEY"):
            Settings(environment="production", state_dir=tmp_path, secret_key=unset)
    assert not (tmp_path / "secret-key").exists()


def test_a_secret_file_that_holds_no_secret_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "secret-key").write_text("\n")
    with pytest.raises(ValueError, match="delete it"):
        without_secret(state_dir=tmp_path)


def test_the_log_names_the_file_that_holds_the_secret(sqlite_url, tmp_path, caplog):
    values = make_settings(sqlite_url).model_dump(exclude={"secret_key"})
    settings = Settings(**{**values, "environment": "development", "state_dir": tmp_path})
    with caplog.at_level(logging.WARNING, logger="ranklab"):
        create_app(settings)
    assert str(tmp_path / "secret-key") in caplog.text


def test_workers_starting_at_once_agree_on_one_secret(tmp_path):
    read = "from app.config import Settings; print(Settings(environment='development').secret_key)"
    environment = {**os.environ, "RANKLAB_STATE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    environment.pop("RANKLAB_SECRET_KEY", None)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", read], env=environment, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    secrets = {worker.communicate(timeout=60)[0].strip() for worker in workers}
    assert len(secrets) == 1 and secrets != {""}
    assert [path.name for path in tmp_path.iterdir()] == ["secret-key"]  # no leftovers
