"""Logging in to the dashboard with `ONDECK_TOKEN`, and out again."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from starlette.responses import Response

from ondeck.entrypoints.web import auth
from ondeck.entrypoints.web.render import redirect, render, safe_next, store_of

router = APIRouter(include_in_schema=False)
private = APIRouter(include_in_schema=False, dependencies=[Depends(auth.require_login)])


@router.get("/login")
def login_page(request: Request, next: str = "/") -> Response:
    guard = auth.guard_of(request)
    target = safe_next(next, "/")
    if not guard.login_enabled or guard.has_session(request):
        return redirect(target)
    return render(request, "login.html", {"next": target})


@router.post("/login", dependencies=[Depends(auth.require_csrf)])
def login(
    request: Request,
    token: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",
) -> Response:
    guard = auth.guard_of(request)
    target = safe_next(next, "/")
    if not guard.login_enabled:
        return redirect(target)
    now = store_of(request).now()
    wait = guard.retry_after(request, now)
    if wait is not None:
        message = f"too many wrong tokens from this address: try again in {wait} s"
        return render(
            request,
            "login.html",
            {"next": target, "flash": message, "flash_kind": "error"},
            status=429,
            headers={"Retry-After": str(wait)},
        )
    if not guard.token_matches(token):
        guard.wrong_token(request, now)
        return render(
            request,
            "login.html",
            {"next": target, "flash": "wrong token", "flash_kind": "error"},
            status=401,
        )
    response = redirect(target)
    auth.rotate_csrf(request)  # a nonce seen before logging in is not trusted after it
    auth.start_session(request, response)
    auth.store_cookies(request, response)
    return response


@private.post("/logout", dependencies=[Depends(auth.require_csrf)])
def logout(request: Request) -> Response:
    response = redirect("/login" if auth.guard_of(request).login_enabled else "/")
    auth.end_session(request, response)
    return response
