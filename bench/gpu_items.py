"""Verify the course's GPU items (`gpus: N > 0`) on a CUDA host, then record their verdicts.

Not a test (CI has no GPU): a script for a lent GPU machine, in two halves.

    python3 bench/gpu_items.py run --out DIR [--repeats 3]      # on the GPU host
    .venv/bin/python bench/gpu_items.py judge DIR/gpu_observations.json [--proofs FILE]   # here

`run` needs only the host's Python with torch (CUDA) and PyYAML: no RankLab dependency, since a
GPU image has none of them. It reads every set and topic under `challenges/`, picks the items
and named proofs whose launch asks for GPUs, and runs each snippet `--repeats` times as
`torchrun --standalone --nproc_per_node=N` would (the host's own torchrun, unsandboxed: these are
instructor-authored snippets). A small wrapper in each rank writes the rank's stdout, stderr and
uncaught exception to files, so every rank is seen on its own. An item that needs more GPUs than
the host has is listed as skipped. The observations go to `DIR/gpu_observations.json`.

`judge` runs here, in the project's virtualenv: it loads the content with the app's loader,
turns each observation into the executor's `RunResult`, judges each item with the same rules as
`ranklab verify` (`app.verification.rules.judge`: the key holds in every run, no distractor
does) and each named proof by its outcome, prints PASS/FAIL with the reasons, and merges the
verdicts (with the content hash of the item as it is now) into the proofs file. An item edited
since the GPU run is reported as stale and not recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OBSERVATIONS = "gpu_observations.json"

# Runs inside each rank: send this rank's output to its own files, run the snippet as
# __main__, and record an uncaught exception the way the executor's rank.py does.
RANK_WRAPPER = """
import json, os, runpy, sys, traceback
record_dir = sys.argv[2]
rank = os.environ.get("RANK", "0")
out = open(os.path.join(record_dir, f"rank{rank}.stdout"), "w", buffering=1)
err = open(os.path.join(record_dir, f"rank{rank}.stderr"), "w", buffering=1)
os.dup2(out.fileno(), 1)
os.dup2(err.fileno(), 2)
sys.stdout = os.fdopen(1, "w", buffering=1)
sys.stderr = os.fdopen(2, "w", buffering=1)
sys.argv = [sys.argv[1]]
record = {"ended": "returned"}
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as stop:
    record = {"ended": "exited", "code": stop.code if isinstance(stop.code, int) else 1}
except BaseException as error:
    traceback.print_exc()
    record = {
        "ended": "raised",
        "type": type(error).__name__,
        "module": type(error).__module__,
        "bases": [base.__name__ for base in type(error).__mro__[1:]],
        "message": str(error),
    }
sys.stdout.flush()
sys.stderr.flush()
with open(os.path.join(record_dir, f"rank{rank}.json"), "w") as handle:
    json.dump(record, handle)
os._exit(0 if record["ended"] == "returned" else 1)
"""


def gpu_runs(challenges: Path) -> list[dict[str, Any]]:
    """Every item and named proof under `challenges` whose launch asks for GPUs."""
    import yaml  # the GPU image has PyYAML; imported here so `judge` does not need it first

    runs = []
    for path in sorted(challenges.rglob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            continue
        if path.name == "topic.yaml":
            entries = [
                (f"topic:{data.get('id')}:proof:{p['id']}", p) for p in data.get("proofs", [])
            ]
        else:
            entries = [(f"{data.get('id')}/{i['id']}", i) for i in data.get("items", [])]
        for key, entry in entries:
            launch = entry.get("launch")
            if not isinstance(launch, dict) or int(launch.get("gpus", 0)) < 1:
                continue
            if "code_file" in entry:
                code = (path.parent / entry["code_file"]).read_text(encoding="utf-8")
            else:
                code = entry.get("code", "")
            fixed = None
            if "fixed_code_file" in entry:
                fixed = (path.parent / entry["fixed_code_file"]).read_text(encoding="utf-8")
            elif "fixed_code" in entry:
                fixed = entry["fixed_code"]
            runs.append(
                {
                    "key": key,
                    "file": str(path.relative_to(challenges.parent)),
                    "code": code,
                    "fixed_code": fixed,
                    "nproc": int(launch.get("nproc", 1)),
                    "gpus": int(launch["gpus"]),
                    "timeout_s": float(launch.get("timeout_s", 20)),
                }
            )
    return runs


def run_once(code: str, nproc: int, timeout_s: float) -> dict[str, Any]:
    """One torchrun of a snippet: each rank's status, exit, output and exception."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "snippet.py").write_text(code, encoding="utf-8")
        (folder / "rank_wrapper.py").write_text(RANK_WRAPPER, encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={nproc}",
            str(folder / "rank_wrapper.py"),
            str(folder / "snippet.py"),
            str(folder),
        ]
        began = time.monotonic()
        try:
            launcher = subprocess.run(
                command, cwd=folder, capture_output=True, text=True, timeout=timeout_s * 2
            )
            timed_out, launcher_output = False, launcher.stderr[-2000:]
        except subprocess.TimeoutExpired as expired:
            timed_out, launcher_output = True, str(expired.stderr or "")[-2000:]
        ranks = []
        for rank in range(nproc):
            record_file = folder / f"rank{rank}.json"
            record = json.loads(record_file.read_text()) if record_file.exists() else None
            ranks.append(
                {
                    "rank": rank,
                    "record": record,
                    "stdout": _read(folder / f"rank{rank}.stdout"),
                    "stderr": _read(folder / f"rank{rank}.stderr"),
                }
            )
        return {
            "timed_out": timed_out,
            "duration_ms": round((time.monotonic() - began) * 1000),
            "ranks": ranks,
            "launcher_stderr": launcher_output,
        }


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def host_facts() -> dict[str, Any]:
    """torch, CUDA and the GPUs, read in a child so this process never initialises CUDA."""
    probe = (
        "import json, torch; print(json.dumps({'torch': torch.__version__, "
        "'cuda': torch.version.cuda, 'gpus': torch.cuda.device_count(), "
        "'names': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())], "
        "'nccl': '.'.join(map(str, torch.cuda.nccl.version())) "
        "if torch.cuda.is_available() else None}))"
    )
    facts = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
    )
    facts["python"] = platform.python_version()
    return facts


def command_run(args: argparse.Namespace) -> int:
    """On the GPU host: run every GPU item and proof, write the observations."""
    facts = host_facts()
    if args.host_gpus is not None:  # a dry run of the mechanics on a CPU host (gloo snippets)
        facts["gpus"] = args.host_gpus
    print(f"host: {facts}", flush=True)
    report: dict[str, Any] = {"host": facts, "repeats": args.repeats, "runs": {}, "skipped": {}}
    done: dict[tuple[Any, ...], dict[str, Any]] = {}  # a proof that reuses an item's snippet
    for entry in gpu_runs(args.challenges):
        if entry["gpus"] > facts["gpus"]:
            report["skipped"][entry["key"]] = (
                f"needs {entry['gpus']} GPUs; this host has {facts['gpus']}"
            )
            print(f"SKIP {entry['key']}: {report['skipped'][entry['key']]}", flush=True)
            continue
        same = (entry["code"], entry["fixed_code"], entry["nproc"])
        if same in done:
            observations, fixed = done[same]["observations"], done[same]["fixed"]
        else:
            observations = [
                run_once(entry["code"], entry["nproc"], entry["timeout_s"])
                for _ in range(args.repeats)
            ]
            fixed = [
                run_once(entry["fixed_code"], entry["nproc"], entry["timeout_s"])
                for _ in range(args.repeats if entry["fixed_code"] else 0)
            ]
        done[same] = {"observations": observations, "fixed": fixed}
        report["runs"][entry["key"]] = {**entry, "observations": observations, "fixed": fixed}
        _save(args.out, report)  # after each item, so a run cut short keeps what it saw
        first = observations[0]["ranks"][0]
        print(
            f"RAN  {entry['key']}: {len(observations)} runs, "
            f"{[o['duration_ms'] for o in observations]} ms; "
            f"rank 0 printed {first['stdout'][:120]!r}",
            flush=True,
        )
    _save(args.out, report)
    print(f"wrote {args.out / OBSERVATIONS}")
    return 0


def _save(out: Path, report: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / OBSERVATIONS).write_text(json.dumps(report, indent=1), encoding="utf-8")


def command_judge(args: argparse.Namespace) -> int:
    """Here: judge the observations with verify's rules and record the verdicts."""
    sys.path.insert(0, str(ROOT))
    from app.challenges import loader
    from app.verification import evidence, proofs, rules

    report = json.loads(args.observations.read_text(encoding="utf-8"))
    host = report["host"]
    print(
        f"observed on: torch {host['torch']}, CUDA {host['cuda']}, NCCL {host['nccl']}, "
        f"{host['gpus']} × {', '.join(host['names'])}"
    )
    content = loader.load_path(args.challenges)
    items = {
        proofs.item_key(loaded.challenge_set.id, item.id): (loaded, item)
        for loaded in content.sets
        for item in loaded.challenge_set.items
    }
    named = {
        f"topic:{loaded.topic.id}:proof:{proof.id}": (loaded, proof)
        for loaded in content.topics
        for proof in getattr(loaded.topic, "proofs", [])
    }
    verdicts: dict[str, proofs.Proof] = {}
    failures = 0
    for key, entry in report["runs"].items():
        runs = [_observation(o, entry, host) for o in entry["observations"]]
        fixed = [_observation(o, entry, host, fixed=True) for o in entry.get("fixed", [])]
        if key in items:
            loaded, item = items[key]
            current = (loaded.code.get(item.id), loaded.fixed_code.get(item.id))
            digest = evidence.item_hash(loaded, item)
            judged = rules.judge(item, [*runs, *fixed])
            problems = judged.problems
        elif key in named:
            topic, proof = named[key]
            current = (topic.proof_code.get(proof.id), None)
            digest = evidence.content_hash(proof, current[0])
            problems = rules.judge_proof(proof.id, proof.outcome, runs).problems
        else:
            print(f"GONE {key}: no longer in the content, not recorded")
            continue
        if current != (entry["code"], entry.get("fixed_code")):
            print(f"STALE {key}: its snippet changed since the GPU run, not recorded")
            continue
        verdict = "fail" if problems else "pass"
        failures += verdict == "fail"
        verdicts[key] = proofs.Proof(verdict, digest)
        print(f"{verdict.upper()} {key}" + "".join(f"\n     {p}" for p in problems))
    for key, why in report.get("skipped", {}).items():
        print(f"GPU  {key}: {why} (left as needs_gpus)")
    if verdicts:  # only the GPU runs' keys change; every other entry is kept as it was
        merged = {**proofs.load(args.proofs), **verdicts}
        proofs.save(args.proofs, merged, proofs_torch(args.proofs))
        print(f"merged {len(verdicts)} verdict(s) into {args.proofs}")
    return 1 if failures else 0


def proofs_torch(path: Path) -> str | None:
    """The torch the proofs file says the course was verified on (the CPU build): kept."""
    return json.loads(path.read_text(encoding="utf-8")).get("torch") if path.exists() else None


def _observation(
    raw: dict[str, Any], entry: dict[str, Any], host: dict[str, Any], fixed: bool = False
) -> Any:
    """One GPU run as the executor's RunResult, wrapped as verify's Observation."""
    from app.verification.rules import Observation
    from executor.contract import Environment, ExceptionInfo, RankResult, RunResult

    ranks = []
    for rank in raw["ranks"]:
        record = rank["record"] or {}
        ended = record.get("ended")
        exception = None
        if ended == "raised":
            exception = ExceptionInfo(
                type=record["type"],
                message=record["message"],
                module=record.get("module"),
                bases=record.get("bases", []),
            )
        if ended == "returned" or (ended == "exited" and record.get("code") == 0):
            status, code = "ok", 0
        elif ended in ("raised", "exited"):
            status, code = "error", 1
        else:
            status, code = ("timeout" if raw["timed_out"] else "killed"), None
        ranks.append(
            RankResult(
                rank=rank["rank"],
                status=status,
                exit_code=code,
                stdout=rank["stdout"],
                stderr=rank["stderr"],
                exception=exception,
            )
        )
    statuses = {rank.status for rank in ranks}
    run_status = "timeout" if raw["timed_out"] else ("ok" if statuses == {"ok"} else "error")
    environment = Environment(
        torch=host["torch"],
        backend="nccl",
        device="cuda",
        nproc=entry["nproc"],
        python=host["python"],
    )
    result = RunResult(
        status=run_status, duration_ms=raw["duration_ms"], ranks=ranks, environment=environment
    )
    return Observation(result, fixed=fixed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    run = verbs.add_parser("run", help="on the GPU host: run the GPU items, write observations")
    run.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-out")))
    run.add_argument("--repeats", type=int, default=3)
    run.add_argument("--challenges", type=Path, default=ROOT / "challenges")
    run.add_argument("--host-gpus", type=int, help="pretend the host has N GPUs (a dry run)")
    judge = verbs.add_parser("judge", help="here: judge observations, merge verdicts into proofs")
    judge.add_argument("observations", type=Path)
    judge.add_argument("--proofs", type=Path, default=ROOT / "challenges" / "proofs.json")
    judge.add_argument("--challenges", type=Path, default=ROOT / "challenges")
    args = parser.parse_args()
    return command_run(args) if args.verb == "run" else command_judge(args)


if __name__ == "__main__":
    sys.exit(main())
