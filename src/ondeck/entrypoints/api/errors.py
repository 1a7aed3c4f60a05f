"""Every error leaves the API as `{"error": {"code", "message"}}`; never a traceback."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException

from ondeck.core import logs
from ondeck.core.errors import OndeckError
from ondeck.db.engine import is_unavailable

log = logs.logger("ondeck.api")

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
}


def error_response(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = [str(p) for p in err.get("loc", ())]
        # Drop only the leading source: a field may itself be named "body" (a task's body).
        if loc and loc[0] in ("body", "query", "path"):
            loc = loc[1:]
        where = ".".join(loc) or "request"
        parts.append(f"{where}: {err.get('msg', 'invalid')}".removeprefix("Value error, "))
    return "; ".join(parts).replace("Value error, ", "") or "invalid request"


def install(app: FastAPI) -> None:
    @app.exception_handler(OndeckError)
    async def _ondeck(_: Request, exc: OndeckError) -> JSONResponse:
        if exc.http_status >= 500 and exc.http_status != 503:
            log.error("internal error: %s", exc)
        return error_response(exc.http_status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "invalid_input", _validation_message(exc))

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400:
            # FastAPI's answer to a body it cannot decode at all (bytes that are not UTF-8);
            # malformed JSON text is already a 422: both are bad input with nothing written.
            return error_response(422, "invalid_input", "body: not readable as JSON text (UTF-8)")
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(DBAPIError)
    async def _db(_: Request, exc: DBAPIError) -> JSONResponse:
        if is_unavailable(exc):
            log.warning("database unavailable: %s", str(exc.orig).strip().splitlines()[0])
            return error_response(503, "unavailable", "database unavailable, try again shortly")
        log.exception("database error")
        return error_response(500, "internal", "internal error (logged on the server)")

    @app.exception_handler(Exception)
    async def _any(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return error_response(500, "internal", "internal error (logged on the server)")
