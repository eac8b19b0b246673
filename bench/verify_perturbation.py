"""Verify a key that holds only by a lucky rank order, and a true one, N times each.

`make bench-perturb` (N=20 by default): with verify's perturbed scheduling the lucky key must
fail every time and the true one pass every time. Prints each verdict tally and the first
problem seen, so a regression shows what verify observed.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from app import embedded
from app.challenges import loader
from app.config import Settings
from app.executor_client import HttpExecutorClient
from app.verification import batch

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "perturb"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--times", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    loaded = loader.load_path(FIXTURE).sets[0]
    items = {item.id: item for item in loaded.challenge_set.items}
    with embedded.temporary_executor(trusted=False) as url:
        client = HttpExecutorClient(url, token=Settings().executor_token)
        facts = batch.executor_facts(client)
        for item_id in ("lucky-order", "any-order"):
            tally: Counter[str] = Counter()
            first_problem = ""
            started = time.monotonic()
            for _ in range(args.times):
                verified = batch.verify_timed(client, loaded, items[item_id], args.repeats, facts)
                tally[verified.report.verdict.value] += 1
                if verified.report.problems and not first_problem:
                    first_problem = verified.report.problems[0]
            took = time.monotonic() - started
            print(f"{item_id}: {dict(tally)} in {args.times} verifies ({took:.1f} s)")
            if first_problem:
                print(f"  first problem: {first_problem}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
