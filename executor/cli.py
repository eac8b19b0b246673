"""Command line: `run SNIPPET.py --nproc N ...` and `executor serve --host H --port P`.

`app.cli` forwards argv starting with `run` or `executor` here, so `ranklab run ...` works.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import fcntl
import ipaddress
import logging
import os
import signal
import sys
import termios
from pathlib import Path
from typing import Any

from executor.contract import RankResult, RunRequest, RunResult, RunStatus
from executor.limits import LimitViolation, check_request
from executor.pool import ExecutorUnavailable
from executor.settings import ExecutorSettings

PR_SET_PDEATHSIG = 1
USAGE_ERROR = 2
INFRASTRUCTURE_ERROR = 3


def main(argv: list[str]) -> int:
    """Run the `run` or `executor serve` sub-command; return the process exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse exits on bad usage; keep main() a plain function
        return int(stop.code or 0)
    leave_controlling_terminal()
    if args.command == "run":
        return _run(args)
    if args.command == "executor" and args.action == "serve":
        return _serve(args)
    if args.command == "agent":
        return _agent(args)
    parser.print_help(sys.stderr)
    return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ranklab")
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("run", help="run a snippet across torch ranks")
    run.add_argument("snippet", type=Path, help="Python file every rank runs")
    run.add_argument("--nproc", type=int, default=2, help="number of ranks (default 2)")
    run.add_argument("--backend", choices=["auto", "gloo", "nccl"], default="auto")
    run.add_argument("--timeout", type=float, default=10.0, help="wall-clock seconds")
    run.add_argument(
        "--launcher",
        choices=["torchrun", "python"],
        default="torchrun",
        help="torchrun: nproc ranks (default); python: one process, as `python snippet.py`",
    )
    run.add_argument("--json", action="store_true", help="print the RunResult as JSON")
    run.add_argument(
        "--trusted",
        action="store_true",
        help="run without the sandbox (instructor-authored content only)",
    )
    executor = commands.add_parser("executor", help="the executor service")
    actions = executor.add_subparsers(dest="action")
    serve = actions.add_parser("serve", help="serve the executor HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8001)
    serve.add_argument("--trusted", action="store_true", help="run every snippet unsandboxed")
    serve.add_argument("--log-level", default="info", help="uvicorn log level")
    serve.add_argument(
        "--parent-pid",
        type=int,
        help="stop (SIGTERM) when this process, the one that started the executor, ends",
    )
    agent = commands.add_parser(
        "agent", help="run snippets pulled from a Redis queue (scale-out executor host)"
    )
    agent.add_argument("--queue", required=True, metavar="URL", help="redis://host:6379/0")
    agent.add_argument("--pool", choices=["cpu", "gpu"], default="cpu")
    agent.add_argument("--slots", type=int, default=None, help="runs at once (default: cores)")
    agent.add_argument("--name", default=None, help="consumer name (default: host-pid)")
    agent.add_argument("--trusted", action="store_true", help="run every snippet unsandboxed")
    agent.add_argument(
        "--reclaim-after",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="take over a run whose agent has been silent this long (default 30)",
    )
    agent.add_argument(
        "--max-deliveries",
        type=int,
        default=3,
        help="set a run aside (dead-letter) after this many deliveries (default 3)",
    )
    return parser


def leave_controlling_terminal() -> None:
    """Give up the terminal the command was started from, keeping stdio and Ctrl-C.

    The warm parents start in sessions of their own and every run in another (pool.py,
    run_init.py), so no rank has a controlling terminal; the command itself lets go of it too, so
    that nothing of the executor keeps a handle through which keystrokes could be pushed into
    the operator's shell (TIOCSTI). The process stays in its process group, which the terminal
    still signals on Ctrl-C. A session leader keeps it: letting go would hang up its session.
    """
    if os.getsid(0) == os.getpid():
        return
    try:
        terminal = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return  # none to give up
    try:
        fcntl.ioctl(terminal, termios.TIOCNOTTY)
    except OSError:
        pass
    finally:
        os.close(terminal)


def _run(args: argparse.Namespace) -> int:
    try:
        code = args.snippet.read_text()
    except (OSError, UnicodeDecodeError) as error:
        print(f"ranklab run: cannot read {args.snippet}: {error}", file=sys.stderr)
        return USAGE_ERROR
    request = RunRequest(
        code=code,
        nproc=args.nproc,
        backend=args.backend,
        timeout_s=args.timeout,
        launcher=args.launcher,
        use_cache=False,
    )
    # One run: skip the DDP warm-up (it costs more than it saves) and need only one slot.
    settings = ExecutorSettings(trusted=args.trusted, warm=False, max_concurrent_runs=1)
    try:
        check_request(request, settings.limits)
        result = asyncio.run(_run_once(settings, request))
    except LimitViolation as error:
        print(f"ranklab run: {error.message}", file=sys.stderr)
        return USAGE_ERROR
    except ExecutorUnavailable as error:
        print(f"ranklab run: {error}", file=sys.stderr)
        return INFRASTRUCTURE_ERROR
    print(result.model_dump_json(indent=2) if args.json else render(result))
    # A failing snippet is data (exit 0); a run the executor refused or broke on is not.
    broken = result.status in (RunStatus.REJECTED, RunStatus.INTERNAL_ERROR)
    return INFRASTRUCTURE_ERROR if broken else 0


async def _run_once(settings: ExecutorSettings, request: RunRequest) -> RunResult:
    from executor.runner import Executor

    executor = Executor(settings)
    try:
        await executor.start()
        return await executor.run(request)
    finally:
        await asyncio.to_thread(executor.close)


def render(result: RunResult) -> str:
    """Format a RunResult as a readable per-rank report."""
    lines = [f"status: {result.status.value}  ({result.duration_ms} ms)"]
    if result.environment is not None:
        env = result.environment
        lines.append(
            f"environment: {env.nproc} ranks, {env.backend} on {env.device}, "
            f"torch {env.torch}, python {env.python}"
        )
    if result.message:
        lines.append(f"message: {result.message}")
    for rank in result.ranks:
        lines.extend(_render_rank(rank))
    return "\n".join(lines)


def _render_rank(rank: RankResult) -> list[str]:
    header = f"--- rank {rank.rank}: {rank.status.value} (exit {rank.exit_code})"
    if rank.exception is not None:
        header += f" {rank.exception.type}: {rank.exception.message}"
    lines = [header + (" [output truncated]" if rank.truncated else "")]
    for name, text in (("stdout", rank.stdout), ("stderr", rank.stderr)):
        if text:
            lines.append(f"[{name}]")
            lines.append(text.rstrip("\n"))
    return lines


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from executor.service import create_app

    settings = ExecutorSettings(trusted=args.trusted) if args.trusted else ExecutorSettings()
    if settings.token is None and not _is_loopback(args.host):
        print(
            f"ranklab executor serve: refusing to listen on {args.host} without a token: set "
            "RANKLAB_EXECUTOR_TOKEN (the app sends the same variable) so that only the app "
            "can run code here",
            file=sys.stderr,
        )
        return USAGE_ERROR
    if args.parent_pid is not None:
        _die_with_parent(args.parent_pid)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _agent(args: argparse.Namespace) -> int:
    from executor.agent import AgentSettings

    if args.slots is not None and args.slots < 1:
        print("ranklab agent: --slots must be at least 1", file=sys.stderr)
        return USAGE_ERROR
    settings = ExecutorSettings(trusted=True) if args.trusted else ExecutorSettings()
    if args.slots is not None:
        settings = settings.model_copy(update={"max_concurrent_runs": args.slots})
    agent_settings = AgentSettings(
        pool=args.pool,
        slots=settings.max_concurrent_runs,
        reclaim_after_s=args.reclaim_after,
        max_deliveries=args.max_deliveries,
    )
    if args.name:
        agent_settings.name = args.name
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    import redis

    try:
        asyncio.run(_serve_agent(args.queue, settings, agent_settings))
    except ExecutorUnavailable as error:
        print(f"ranklab agent: {error}", file=sys.stderr)
        return INFRASTRUCTURE_ERROR
    except (redis.RedisError, ValueError) as error:  # ValueError: not a redis:// URL
        print(f"ranklab agent: cannot use the queue {args.queue}: {error}", file=sys.stderr)
        return INFRASTRUCTURE_ERROR
    return 0


async def _serve_agent(queue_url: str, settings: ExecutorSettings, agent_settings: Any) -> None:
    from executor import bus
    from executor.agent import Agent
    from executor.runner import Executor

    runner = Executor(settings)
    client = bus.aconnect(queue_url)  # the bus's timeouts, as the app's clients
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):  # stop pulling; finish what is running
        loop.add_signal_handler(signum, stopping.set)
    try:
        await client.ping()  # before warming torch: a wrong URL fails at once
        await runner.start()
        print(
            f"ranklab agent {agent_settings.name}: {agent_settings.slots} slot(s) on pool "
            f"{agent_settings.pool}, {queue_url}",
            file=sys.stderr,
            flush=True,
        )
        await Agent(client, runner, agent_settings).serve(stopping)
    finally:
        await client.aclose()
        await asyncio.to_thread(runner.close)


def _die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGTERM when the parent goes: uvicorn then shuts down gracefully and
    the pool stops its zygote and removes its cgroups, even if the parent was SIGKILLed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # it went before the line above took effect
        sys.exit(0)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve beyond loopback


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
