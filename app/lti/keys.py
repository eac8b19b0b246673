"""The JOSE parts of LTI (joserfc): the tool's keys and JWKS, signing its assertions, and
verifying a platform's id_token against that platform's JWKS (cached, refetched on a new kid)."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey
from joserfc.jws import extract_compact

from app.lti.rules import LaunchRefused

ALGORITHMS = ["RS256"]  # what LTI 1.3 (IMS Security Framework 5.1.3) requires platforms use
# A kid we do not know makes us fetch the platform's JWKS again, at most this often: a forged
# token naming new kids cannot make us hammer the platform.
REFETCH_AFTER_S = 5.0


def new_key() -> tuple[str, str]:
    """A fresh 2048-bit RSA key: its kid and its private PEM."""
    kid = secrets.token_hex(8)
    key = RSAKey.generate_key(2048, parameters={"kid": kid})
    return kid, key.as_pem(private=True).decode()


def _key(kid: str, pem: str) -> RSAKey:
    return RSAKey.import_key(pem, {"kid": kid, "use": "sig", "alg": "RS256"})


def public_jwks(keys: list[tuple[str, str]]) -> dict[str, Any]:
    """The JWKS a platform reads to check our signatures: the public halves only."""
    return dict(KeySet([_key(kid, pem) for kid, pem in keys]).as_dict(private=False))


def sign(kid: str, pem: str, claims: dict[str, Any]) -> str:
    """A JWT signed with one of the tool's keys (RS256, its kid in the header)."""
    return jwt.encode({"alg": "RS256", "kid": kid, "typ": "JWT"}, claims, _key(kid, pem))


def _header(token: str) -> dict[str, Any]:
    try:
        return dict(extract_compact(token.encode()).headers())
    except (JoseError, ValueError) as error:
        raise LaunchRefused("The launch's id_token is not a signed JWT.") from error


class PlatformKeys:
    """Each platform's JWKS, fetched when first needed and again when a token names a kid the
    cached set lacks (the platform rotated its key)."""

    def __init__(self, fetch: Callable[[str], dict[str, Any]]) -> None:
        self._fetch = fetch
        self._sets: dict[str, tuple[KeySet, float]] = {}
        self._lock = threading.Lock()

    def _set(self, url: str, kid: str | None) -> KeySet:
        with self._lock:
            cached = self._sets.get(url)
            known = cached is not None and any(k.kid == kid for k in cached[0].keys)
            if cached is not None and (known or time.monotonic() - cached[1] < REFETCH_AFTER_S):
                return cached[0]
        try:
            fetched = KeySet.import_key_set(self._fetch(url))  # type: ignore[arg-type]
        except (JoseError, ValueError, KeyError, TypeError) as error:
            raise LaunchRefused("The platform's JWKS could not be read.") from error
        with self._lock:
            self._sets[url] = (fetched, time.monotonic())
        return fetched

    def verify(self, token: str, jwks_url: str) -> dict[str, Any]:
        """The token's claims once its signature checks against the platform's keys."""
        header = _header(token)
        if header.get("alg") not in ALGORITHMS:
            raise LaunchRefused("The launch's id_token must be signed with RS256.")
        kid = header.get("kid")
        keys = self._set(jwks_url, kid)
        try:
            return dict(jwt.decode(token, keys, algorithms=ALGORITHMS).claims)
        except JoseError as error:
            raise LaunchRefused(
                "The launch's signature does not check against the platform's keys."
            ) from error
