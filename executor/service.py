"""The executor's HTTP API: /healthz, POST /v1/runs and its SSE twin /v1/runs/stream."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from executor.contract import OutputEvent, RunRequest, RunResult
from executor.limits import LimitViolation, max_body_bytes
from executor.pool import ExecutorUnavailable, QueueFull
from executor.runner import Event, Executor
from executor.settings import ExecutorSettings


def create_app(
    settings: ExecutorSettings | None = None, executor: Executor | None = None
) -> FastAPI:
    """Build the service; it owns (starts and stops) the executor unless one is passed in."""
    settings = settings or ExecutorSettings()
    owned = executor is None
    runner = executor or Executor(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Start warming in the background: the server answers at once, /healthz says 503 until
        # the pool is warm.
        starting = asyncio.create_task(runner.start()) if owned else None
        try:
            yield
        finally:
            if starting is not None:
                starting.cancel()
            if owned:
                await asyncio.to_thread(runner.close)

    # With a token (always, beyond loopback) the schema is behind it like the run API, and
    # the docs pages are off: a browser cannot send the bearer token, so they could never
    # load the schema anyway. Without one (loopback only), FastAPI's defaults stay.
    guarded = runner.settings.token is not None
    app = FastAPI(
        title="RankLab executor",
        lifespan=lifespan,
        openapi_url=None if guarded else "/openapi.json",
        docs_url=None if guarded else "/docs",
        redoc_url=None if guarded else "/redoc",
    )
    app.state.executor = runner
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes(settings.limits))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'][1:]) or 'body'}: {item['msg']}"
            for item in error.errors()
        )
        return JSONResponse({"detail": problems}, status_code=422)

    @app.exception_handler(LimitViolation)
    async def over_limits(request: Request, error: LimitViolation) -> JSONResponse:
        return JSONResponse({"detail": error.message}, status_code=error.status_code)

    @app.exception_handler(QueueFull)
    async def queue_full(request: Request, error: QueueFull) -> JSONResponse:
        headers = {"Retry-After": str(settings.retry_after_s)}
        detail = f"the executor is busy ({error}); retry later"
        return JSONResponse({"detail": detail}, status_code=503, headers=headers)

    @app.exception_handler(ExecutorUnavailable)
    async def unavailable(request: Request, error: ExecutorUnavailable) -> JSONResponse:
        headers = {"Retry-After": str(settings.retry_after_s)}
        return JSONResponse({"detail": str(error)}, status_code=503, headers=headers)

    def token_state(authorization: str | None) -> str:
        # Lets a client tell "this executor is not the one I started" (it refuses my token)
        # from "it is still starting"; /v1/runs answers 401 alike, so nothing new is revealed.
        if runner.settings.token is None:
            return "none"
        return "accepted" if _token_matches(runner.settings.token, authorization) else "refused"

    @app.get("/healthz")
    async def healthz(authorization: Annotated[str | None, Header()] = None) -> JSONResponse:
        """Answer 200 once the warm pool is ready, 503 before."""
        token = token_state(authorization)
        if not runner.ready:
            return JSONResponse({"status": "starting", "token": token}, status_code=503)
        info = runner.info
        sandbox = "trusted" if info.get("trusted") else "on"
        if info.get("sandbox_error"):
            sandbox = f"unavailable: {info['sandbox_error']}"
        return JSONResponse(
            {
                "status": "ok",
                "torch": info.get("torch"),
                "sandbox": sandbox,
                "cuda_devices": info.get("cuda_devices", 0),
                "gpus": info.get("gpus", []),  # index, name, memory_bytes of each
                "max_timeout_s": runner.settings.limits.max_timeout_s,
                "token": token,
            }
        )

    def authorised(authorization: Annotated[str | None, Header()] = None) -> None:
        """Require the shared secret, when one is set (always, beyond loopback: see cli.py)."""
        token = runner.settings.token
        if token is not None and not _token_matches(token, authorization):
            raise HTTPException(
                401,
                "this executor needs its token: send Authorization: Bearer "
                "<RANKLAB_EXECUTOR_TOKEN>",
                headers={"WWW-Authenticate": "Bearer"},
            )

    if guarded:

        @app.get("/openapi.json", dependencies=[Depends(authorised)], include_in_schema=False)
        async def schema() -> JSONResponse:
            """The OpenAPI schema, to whoever holds the token."""
            return JSONResponse(app.openapi())

    @app.post("/v1/runs", dependencies=[Depends(authorised)])
    async def create_run(request: RunRequest) -> RunResult:
        """Run a snippet across ranks and return its RunResult."""
        return await runner.run(request)

    @app.post("/v1/runs/stream", dependencies=[Depends(authorised)])
    async def stream_run(request: RunRequest) -> StreamingResponse:
        """Run a snippet, streaming each rank's output as SSE, then the RunResult."""
        events = await runner.open(request)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(_sse(events), media_type="text/event-stream", headers=headers)

    return app


def _token_matches(token: str, authorization: str | None) -> bool:
    return hmac.compare_digest((authorization or "").encode(), f"Bearer {token}".encode())


class BodyLimit:
    """Refuse a request body over `max_bytes` with 413 as it arrives, before anything parses it.

    FastAPI reads the whole body before validating it, so without this a client could make the
    service hold any amount of memory; the code limit alone is checked only after parsing.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body up to the limit, then hand it to the app as if unread."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:  # a chunked body, or a Content-Length that lied
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # what follows the body: the disconnect, for streams
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"the request body is over the limit of {self.max_bytes} bytes"
        await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)


async def _sse(events: AsyncIterator[Event]) -> AsyncIterator[str]:
    async with contextlib.aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, OutputEvent):
                yield f"event: output\ndata: {event.model_dump_json()}\n\n"
            else:
                yield f"event: result\ndata: {json.dumps(event.model_dump(mode='json'))}\n\n"
