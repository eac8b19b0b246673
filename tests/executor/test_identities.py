"""Slots claim distinct sandbox uids from a fixed range, held as long as the claimer lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from executor import identities


def _claim_in_child(lock_dir: Path) -> int:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write_end, str(identities.claim(str(lock_dir), first=1000, count=2)).encode())
        os._exit(0)
    os.close(write_end)
    uid = int(os.read(read_end, 64))
    os.close(read_end)
    os.waitpid(pid, 0)
    return uid


def test_two_claimers_get_different_uids_and_a_third_finds_none(tmp_path: Path) -> None:
    first = identities.claim(str(tmp_path), first=1000, count=2)
    second = identities.claim(str(tmp_path), first=1000, count=2)
    assert {first, second} == {1000, 1001}
    with pytest.raises(identities.NoFreeIdentity):
        identities.claim(str(tmp_path), first=1000, count=2)


def test_a_uid_comes_free_when_its_claimer_ends(tmp_path: Path) -> None:
    # Another process (another executor's slot) claims, then dies: its uid is free again.
    assert _claim_in_child(tmp_path) == 1000
    assert _claim_in_child(tmp_path) == 1000


def test_the_range_is_above_every_user_and_container_range_and_below_2_31() -> None:
    assert identities.FIRST_UID > 0x6FFFFFFF
    assert identities.FIRST_UID + identities.UID_COUNT < 2**31
    assert not identities.in_range(65534)
