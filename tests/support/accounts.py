"""Make staff users in tests: sign up over HTTP, then set the role in the database."""

from __future__ import annotations

from sqlmodel import Session, select

from app.accounts.models import Role, User
from app.db import make_engine
from tests.support.learner import Learner


def set_role(database_url: str, username: str, role: Role) -> None:
    """Give an existing account a role (as `ranklab users create --role` or an admin would)."""
    engine = make_engine(database_url)
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        user.role = role
        session.add(user)
        session.commit()
    engine.dispose()


def sign_up(person: Learner, username: str, database_url: str, role: Role | None = None) -> None:
    """Create an account for this browser (and give it a role)."""
    person.get("/")
    response = person.post("/register", {"username": username, "password": "password-123"})
    assert response.status_code == 200, response.text
    if role is not None:
        set_role(database_url, username, role)


def user_id(database_url: str, username: str) -> int:
    """Look up a user's id."""
    engine = make_engine(database_url)
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
    engine.dispose()
    assert user.id is not None
    return user.id
