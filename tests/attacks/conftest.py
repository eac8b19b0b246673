"""The attacks suite: one file per attack on isolation between runs, between a run and the
operator, or between a run and the host's kernel, each saying what it attacks and the status it
must get. The real Redis of the bus
tests is shared for the attacks that go through an agent."""

from __future__ import annotations

from tests.bus.conftest import redis_url

__all__ = ["redis_url"]
