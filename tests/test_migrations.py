"""Alembic is the only way the schema changes: head matches the models on SQLite and PostgreSQL."""

from sqlalchemy import inspect

from app import migrations
from app.db import make_engine


def test_upgrade_head_then_check_finds_nothing_to_generate(database_url, capsys):
    assert migrations.check(database_url) == 0
    engine = make_engine(database_url)
    tables = set(inspect(engine).get_table_names())
    engine.dispose()
    expected = {"user_account", "web_session", "set_attempt", "item_attempt", "submission"}
    assert expected | {"verification_record"} <= tables


def test_upgrading_twice_is_harmless(database_url):
    migrations.upgrade(database_url)
    assert migrations.check(database_url) == 0
