"""The `ranklab` command: validate and describe content, migrate, serve, and run snippets."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from app.challenges import json_schema, loader
from app.config import ROOT, Settings

EXECUTOR_COMMANDS = {"run", "executor"}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in EXECUTOR_COMMANDS:
        # The executor owns torch; import it only for its own commands so the app never does.
        executor_cli = importlib.import_module("executor.cli")
        return int(executor_cli.main(args_list))
    parser = _parser()
    args = parser.parse_args(args_list)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    return int(args.handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ranklab", description=__doc__)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    validate = commands.add_parser("validate", help="check challenge files; exit 1 on any error")
    validate.add_argument("path", nargs="?", type=Path, default=ROOT / "challenges")
    validate.set_defaults(handler=_validate)

    schema = commands.add_parser("schema", help="write the JSON Schema for challenge files")
    schema.add_argument("--output", type=Path, default=json_schema.SCHEMA_PATH)
    schema.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    schema.set_defaults(handler=_schema)

    database = commands.add_parser("db", help="database migrations")
    database.add_argument("action", choices=["upgrade", "check"])
    database.set_defaults(handler=_database)

    serve = commands.add_parser("serve", help="serve the web app (and the embedded executor)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--no-executor", action="store_true", help="do not start an executor")
    serve.set_defaults(handler=_serve)

    commands.add_parser("run", help="run a snippet across ranks (see `ranklab run --help`)")
    commands.add_parser("executor", help="the executor service (see `ranklab executor --help`)")
    return parser


def _validate(args: argparse.Namespace) -> int:
    path: Path = args.path
    if not path.exists():
        print(f"ranklab validate: {path}: no such file or folder", file=sys.stderr)
        return 2
    report = loader.load_path(path)
    for error in report.errors:
        print(error, file=sys.stderr)
    items = sum(len(loaded.challenge_set.items) for loaded in report.sets)
    verdict = "ok" if report.ok else f"{len(report.errors)} error(s)"
    print(
        f"{len(report.files)} file(s), {len(report.sets)} valid set(s), {items} item(s): {verdict}"
    )
    return 0 if report.ok else 1


def _schema(args: argparse.Namespace) -> int:
    output: Path = args.output
    if args.check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != json_schema.render():
            print(f"{output} is stale: run `ranklab schema`", file=sys.stderr)
            return 1
        print(f"{output} is up to date")
        return 0
    json_schema.write(output)
    print(f"wrote {output}")
    return 0


def _database(args: argparse.Namespace) -> int:
    from app import migrations

    settings = Settings()
    if args.action == "upgrade":
        migrations.upgrade(settings.database_url)
        print("database is at the latest revision")
        return 0
    return migrations.check(settings.database_url)


def _serve(args: argparse.Namespace) -> int:
    from app import embedded

    return embedded.serve(Settings(), args.host, args.port, with_executor=not args.no_executor)


if __name__ == "__main__":
    raise SystemExit(main())
