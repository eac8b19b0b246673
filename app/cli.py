"""The `ranklab` command: validate and describe content, migrate, serve, and run snippets."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app.challenges import course, course_rules, json_schema, loader
from app.config import ROOT, Settings

EXECUTOR_COMMANDS = {"run", "executor", "agent"}


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

    new = commands.add_parser(
        "new", help="start a set, topic or lab from a template that validates and verifies"
    )
    new.add_argument("kind", choices=["set", "topic", "lab"])
    new.add_argument("name", help="its id (lowercase letters, digits, dashes); also its folder")
    new.add_argument(
        "--topic", metavar="ID", help="the topic a set or lab belongs to (must exist under --dir)"
    )
    new.add_argument(
        "--dir",
        type=Path,
        default=ROOT / "challenges",
        dest="root",
        help="the content folder (default: challenges/); a lab goes under its labs/",
    )
    new.set_defaults(handler=_new)

    schema = commands.add_parser("schema", help="write the JSON Schema for challenge files")
    schema.add_argument("--output", type=Path, default=json_schema.SCHEMA_PATH)
    schema.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    schema.set_defaults(handler=_schema)

    content = commands.add_parser("content", help="write CONTENT.md: the course per topic")
    content.add_argument("path", nargs="?", type=Path, default=ROOT / "challenges")
    content.add_argument("--output", type=Path, default=None)
    content.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    content.set_defaults(handler=_content)

    database = commands.add_parser("db", help="database migrations")
    database.add_argument("action", choices=["upgrade", "check"])
    database.set_defaults(handler=_database)

    users = commands.add_parser("users", help="manage accounts")
    user_actions = users.add_subparsers(title="actions", metavar="ACTION")
    create = user_actions.add_parser("create", help="create an account (e.g. the first admin)")
    create.add_argument("username")
    create.add_argument("--role", choices=["learner", "instructor", "admin"], default="learner")
    create.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from standard input instead of prompting",
    )
    create.set_defaults(handler=_create_user)
    prune = user_actions.add_parser(
        "prune-guests", help="delete guests that never acted (no answer, card, run...)"
    )
    prune.add_argument(
        "--days", type=float, default=7.0, help="only guests made this long ago (default 7)"
    )
    prune.set_defaults(handler=_prune_guests)

    verify = commands.add_parser(
        "verify", help="run every executable item and prove its key; exit 1 on any mismatch"
    )
    verify.add_argument("path", nargs="?", type=Path, default=ROOT / "challenges")
    verify.add_argument(
        "--executor", metavar="URL", help="an executor to use (default: start one for this command)"
    )
    verify.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs per item, to catch output that varies (default 3)",
    )
    verify.add_argument(
        "--trusted",
        action="store_true",
        help="start the executor unsandboxed (instructor content only)",
    )
    verify.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="items verified at once through the executor's slots (default: the cores + 1, "
        "at most 8, with the private executor; 1 with --executor, whose slots others share)",
    )
    verify.add_argument(
        "--json", action="store_true", help="print one JSON record per item, then a summary"
    )
    verify.add_argument(
        "--no-record",
        action="store_true",
        help="do not record the results in the database (DATABASE_URL)",
    )
    verify.add_argument(
        "--proofs",
        type=Path,
        default=None,
        metavar="FILE",
        help="merge the verdicts into this proofs file (challenges/proofs.json), "
        "which `ranklab content` reads",
    )
    verify.add_argument(
        "--item",
        action="append",
        default=[],
        metavar="ID",
        help="verify only this item (an item id, set/item, a set id or a lab id); repeatable",
    )
    verify.add_argument(
        "--all",
        action="store_true",
        dest="run_all",
        help="run every item, even those proven for their content (default: skip them)",
    )
    verify.set_defaults(handler=_verify)

    serve = commands.add_parser("serve", help="serve the web app (and the embedded executor)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--no-executor", action="store_true", help="do not start an executor")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="serve from N processes (N > 1 needs RANKLAB_QUEUE_URL or RANKLAB_EXECUTOR_URL: "
        "the embedded executor serves one process)",
    )
    serve.set_defaults(handler=_serve)

    lti = commands.add_parser("lti", help="LTI 1.3: the LMS platforms and the tool's keys")
    lti_actions = lti.add_subparsers(title="actions", metavar="ACTION")
    platform = lti_actions.add_parser("add-platform", help="register (or update) an LMS")
    platform.add_argument("--issuer", required=True, help="the platform's issuer (iss)")
    platform.add_argument("--client-id", required=True, help="RankLab's client id there")
    platform.add_argument(
        "--deployment-id", action="append", required=True, help="a deployment id (repeat)"
    )
    platform.add_argument("--login-url", required=True, help="its OIDC authentication URL")
    platform.add_argument("--token-url", required=True, help="its OAuth2 access token URL")
    platform.add_argument("--jwks-url", required=True, help="its public keyset URL")
    platform.set_defaults(handler=_lti_add_platform)
    rotate = lti_actions.add_parser(
        "rotate-key", help="make a new signing key (the previous one stays published)"
    )
    rotate.set_defaults(handler=_lti_rotate_key)
    lti_actions.add_parser("list", help="the platforms registered").set_defaults(handler=_lti_list)

    commands.add_parser("run", help="run a snippet across ranks (see `ranklab run --help`)")
    commands.add_parser("executor", help="the executor service (see `ranklab executor --help`)")
    commands.add_parser(
        "agent", help="run snippets from a Redis queue (see `ranklab agent --help`)"
    )
    return parser


def _validate(args: argparse.Namespace) -> int:
    path: Path = args.path
    if not path.exists():
        print(f"ranklab validate: {path}: no such file or folder", file=sys.stderr)
        return 2
    if path.is_file() and path.suffix not in loader.YAML_SUFFIXES:
        print(
            f"ranklab validate: {path} is not a YAML file: validate reads challenge folders and "
            f"their YAML files (give the folder, e.g. {path.parent}); `ranklab verify "
            f"{path.parent}` runs the snippets",
            file=sys.stderr,
        )
        return 2
    folder = course.load(path)
    report = folder.report
    # The rules the shipped course is held to (the suite's content tests call the same ones).
    report.errors = sorted([*report.errors, *course_rules.problems(report)])
    for error in report.errors:
        print(error, file=sys.stderr)
    for warning in report.warnings:
        print(warning, file=sys.stderr)
    items = sum(len(loaded.challenge_set.items) for loaded in report.sets)
    verdict = "ok" if report.ok else f"{len(report.errors)} error(s)"
    if report.warnings:
        verdict += f", {len(report.warnings)} warning(s)"
    topics, labs = len(report.topics), len(report.labs)
    shown = f"{path}" if path.is_file() else f"{str(path).rstrip('/')}/"
    # A folder inside a course is checked against that course's topics and ids: say which.
    within = "" if folder.course == path else f", references against {folder.course}/"
    print(
        f"read {shown} ({len(report.files)} file(s): {len(report.sets)} valid set(s), "
        f"{topics} topic(s), {labs} lab(s), {items} item(s){within}): {verdict}"
    )
    return 0 if report.ok else 1


def _new(args: argparse.Namespace) -> int:
    from app.challenges import scaffold

    if args.kind == "topic" and args.topic:
        print("ranklab new: --topic is for a set or a lab; a topic is its own", file=sys.stderr)
        return 2
    try:
        written = scaffold.create(args.kind, args.name, args.root, args.topic)
    except scaffold.ScaffoldError as error:
        print(f"ranklab new {args.kind}: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    print(
        f"next: edit them, then `ranklab validate {args.root}` and "
        f"`ranklab verify {args.root}` (it runs only what changed)"
    )
    return 0


def _content(args: argparse.Namespace) -> int:
    from app.challenges import report
    from app.challenges.catalog import Catalog
    from app.verification import proofs

    output: Path = args.output or report.CONTENT_PATH
    try:
        proven = proofs.load(args.path / proofs.FILE_NAME)
    except ValueError as error:
        print(f"ranklab content: {error}", file=sys.stderr)
        return 1
    text = report.render(Catalog.load(args.path), proven)
    if args.check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            print(f"{output} is stale: run `ranklab content`", file=sys.stderr)
            return 1
        print(f"{output} is up to date")
        return 0
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    output: Path = args.output
    if args.check:
        stale = False
        for path, text in json_schema.rendered(output).items():
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != text:
                print(f"{path} is stale: run `ranklab schema`", file=sys.stderr)
                stale = True
            else:
                print(f"{path} is up to date")
        return 1 if stale else 0
    for path in json_schema.write(output):
        print(f"wrote {path}")
    return 0


def _database(args: argparse.Namespace) -> int:
    from app import migrations

    settings = Settings()
    if args.action == "upgrade":
        migrations.upgrade(settings.database_url)
        print("database is at the latest revision")
        return 0
    return migrations.check(settings.database_url)


def _create_user(args: argparse.Namespace) -> int:
    import getpass

    from sqlmodel import Session

    from app.accounts import service as accounts
    from app.accounts.models import Role
    from app.db import make_engine, utcnow
    from app.errors import RankLabError

    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"Password for {args.username}: ")
        if getpass.getpass("Repeat it: ") != password:
            print("ranklab users create: the passwords differ", file=sys.stderr)
            return 1
    engine = make_engine(Settings().database_url)
    try:
        with Session(engine) as session:
            user = accounts.create_account(
                session, args.username, password, utcnow(), role=Role(args.role)
            )
    except RankLabError as error:
        print(f"ranklab users create: {error.message}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    print(f"created {user.username} ({user.role.value})")
    return 0


def _prune_guests(args: argparse.Namespace) -> int:
    from datetime import timedelta

    from sqlmodel import Session

    import app.models  # noqa: F401  every table: each one names who acted
    from app.accounts import service as accounts
    from app.db import make_engine, utcnow

    engine = make_engine(Settings().database_url)
    try:
        with Session(engine) as session:
            pruned = accounts.prune_idle_guests(session, utcnow() - timedelta(days=args.days))
    finally:
        engine.dispose()
    print(f"pruned {pruned} guests that never acted")
    return 0


def _lti(action: str, work: Callable[..., int], args: argparse.Namespace) -> int:
    from sqlmodel import Session

    from app.db import make_engine, utcnow
    from app.errors import RankLabError

    engine = make_engine(Settings().database_url)
    try:
        with Session(engine) as session:
            return work(session, utcnow(), args)
    except RankLabError as error:
        print(f"ranklab lti {action}: {error.message}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()


def _lti_add_platform(args: argparse.Namespace) -> int:
    from app.lti import service

    def work(session: Any, now: Any, args: argparse.Namespace) -> int:
        found = service.add_platform(
            session, args.issuer, args.client_id, args.deployment_id,
            args.login_url, args.token_url, args.jwks_url, now,
        )  # fmt: skip
        print(f"platform {found.issuer} (client id {found.client_id}): {found.deployment_ids}")
        return 0

    return _lti("add-platform", work, args)


def _lti_rotate_key(args: argparse.Namespace) -> int:
    from app.lti import service

    def work(session: Any, now: Any, _args: argparse.Namespace) -> int:
        print(f"new signing key {service.rotate_key(session, now)}")
        return 0

    return _lti("rotate-key", work, args)


def _lti_list(args: argparse.Namespace) -> int:
    from app.lti import service

    def work(session: Any, _now: Any, _args: argparse.Namespace) -> int:
        for found in service.platforms(session):
            print(f"{found.issuer}\t{found.client_id}\t{found.deployment_ids}")
        return 0

    return _lti("list", work, args)


def _verify(args: argparse.Namespace) -> int:
    from app.verification import command

    jobs = command.default_jobs(args.executor) if args.jobs is None else args.jobs
    if jobs < 1:
        print("ranklab verify: --jobs must be at least 1", file=sys.stderr)
        return 2
    return command.verify(
        args.path,
        executor_url=args.executor,
        repeats=args.repeats,
        trusted=args.trusted,
        jobs=jobs,
        as_json=args.json,
        database_url=None if args.no_record else Settings().database_url,
        proofs_path=args.proofs,
        items=args.item,
        run_all=args.run_all,
    )


def _serve(args: argparse.Namespace) -> int:
    from app import embedded

    if args.workers < 1:
        print("ranklab serve: --workers must be at least 1", file=sys.stderr)
        return 2
    return embedded.serve(
        Settings(), args.host, args.port, with_executor=not args.no_executor, workers=args.workers
    )


if __name__ == "__main__":
    raise SystemExit(main())
