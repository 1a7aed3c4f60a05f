"""Rendering for the dashboard: the Jinja2 environment, time filters, page and partial
responses, redirects after a POST, and errors shown as a flash instead of a 500.

Times: every instant is shown in the configured zone with a relative hint ("in 3 h",
"2 days ago"), inside a `<time datetime=…>` holding the exact ISO-8601 instant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Path, Request
from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context, select_autoescape
from markupsafe import Markup
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ondeck import __version__
from ondeck.core.clock import iso, local, today
from ondeck.core.errors import OndeckError
from ondeck.core.humanize import counted, relative, span
from ondeck.core.models import Task, details_in_zone
from ondeck.core.validation import BIGINT_MAX
from ondeck.entrypoints.gateway import Call, call_of
from ondeck.entrypoints.web import auth
from ondeck.system import heartbeat
from ondeck.work.lease_state import Lease, lease_of

# A path id: a number the database can hold (a larger one would fail in the driver).
Id = Annotated[int, Path(ge=1, le=BIGINT_MAX)]

# Defence in depth behind autoescaping: no inline script or style runs on these pages.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def store_of(request: Request) -> Call:
    """The request's call on the store: one instant per request, shared by the route and
    the page it renders (the same `Call` the API's routes get)."""
    return call_of(request)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


# --- filters --------------------------------------------------------------------------


def _time_tag(instant: datetime, zone: Any, text: str) -> Markup:
    return Markup('<time datetime="{}">{}</time>').format(iso(instant, zone), text)


@pass_context
def when(ctx: Any, instant: datetime | None) -> Markup:
    """`2026-06-15 11:00 (in 2 h)` in the configured zone; a dash for nothing."""
    if instant is None:
        return Markup("—")
    zone, now = ctx["zone"], ctx["now"]
    shown = local(instant, zone).strftime("%Y-%m-%d %H:%M:%S")
    return _time_tag(instant, zone, f"{shown} ({relative(instant, now)})")


@pass_context
def ago(ctx: Any, instant: datetime | None) -> str:
    return "—" if instant is None else relative(instant, ctx["now"])


@pass_context
def day(ctx: Any, value: date | None) -> Markup:
    """`2026-07-01 (Wed, in 16 days)`: a date in the zone, relative to today."""
    if value is None:
        return Markup("—")
    diff = (value - ctx["today"]).days
    if diff == 0:
        hint = "today"
    elif diff == 1:
        hint = "tomorrow"
    elif diff == -1:
        hint = "yesterday"
    elif diff > 0:
        hint = f"in {diff} days"
    else:
        hint = f"{-diff} days ago"
    return Markup('<time datetime="{}">{} ({}, {})</time>').format(
        value.isoformat(), value.isoformat(), value.strftime("%a"), hint
    )


def duration(delta: timedelta | None) -> str:
    return "—" if delta is None else span(delta)


def size(count: int | None) -> str:
    if count is None:
        return "—"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"


@pass_context
def details(ctx: Any, value: dict[str, Any] | None) -> str:
    """An event's details as `key=value` pairs, in one line; instants in the zone."""
    if not value:
        return ""
    shown = details_in_zone(value, ctx["zone"])
    return ", ".join(f"{k}={v}" for k, v in shown.items() if v is not None and v != "")


_env = Environment(
    loader=PackageLoader("ondeck.entrypoints.web", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters.update(
    when=when, ago=ago, day=day, duration=duration, size=size, details=details, counted=counted
)


@pass_context
def lease(ctx: Any, task: Task) -> Lease:
    """A RUNNING task's lease by `lease_state.lease_of`, as the context tells it: expired
    for how long, and what releases it (the jobs heartbeat is read once per request, and
    only when a lease shown is past its end)."""
    request = ctx["request"]

    def jobs() -> heartbeat.JobsHealth:
        found: heartbeat.JobsHealth | None = getattr(request.state, "jobs_health", None)
        if found is None:
            store = store_of(request)
            with store.read() as conn:
                found = heartbeat.jobs_health(
                    conn, ctx["now"], tick_seconds=store.settings.tick_seconds
                )
            request.state.jobs_health = found
        return found

    return lease_of(task, ctx["now"], ctx["grace"], jobs)


def with_query(path: str, **params: Any) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return path + (f"?{urlencode(kept)}" if kept else "")


_env.globals.update(lease=lease, with_query=with_query)


# --- responses ------------------------------------------------------------------------


def base_context(request: Request) -> dict[str, Any]:
    store = store_of(request)
    now = store.now()
    zone = store.settings.zone
    return {
        "request": request,
        "now": now,
        "zone": zone,
        "today": today(now, zone),
        "tz": store.settings.tz,
        "grace": store.settings.lease_grace,
        "version": __version__,
        "csrf": auth.form_token(request),
        "login_enabled": auth.guard_of(request).login_enabled,
        "path": request.url.path,
        "here": here(request),
        "flash": done_message(request),
        "flash_kind": "ok",
    }


def render(
    request: Request,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    values = base_context(request)
    values.update(context or {})
    body = _env.get_template(template).render(values)
    response = HTMLResponse(
        body, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})}
    )
    auth.store_cookies(request, response)
    if getattr(request.state, "flash_shown", False):
        response.delete_cookie(auth.FLASH_COOKIE, path="/", httponly=True, samesite="strict")
    return response


def here(request: Request) -> str:
    """This page's path and query: where a form sends the browser back after a POST."""
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def safe_next(value: str | None, default: str) -> str:
    """A local path to go back to; anything else (another site, `//host`) gives the default."""
    if (
        not value
        or not value.startswith("/")
        or value.startswith("//")
        or "\\" in value
        or any(ord(c) < 32 for c in value)
    ):
        return default
    return value


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def flash_fragment(request: Request, message: str, kind: str, *, status: int) -> HTMLResponse:
    """An htmx answer that lands in the page's flash area instead of the request's target."""
    return render(
        request,
        "_flash.html",
        {"flash": message, "flash_kind": kind},
        status=status,
        headers={"HX-Retarget": "#flash", "HX-Reswap": "innerHTML"},
    )


class FormError(Exception):
    """A service refused a dashboard form: shown as a flash with the error's 4xx status."""

    def __init__(self, error: OndeckError) -> None:
        super().__init__(str(error))
        self.error = error
        self.status = error.http_status if 400 <= error.http_status < 500 else 503


@contextmanager
def refused() -> Iterator[None]:
    """Turn a service's refusal into a FormError the route renders (never a 500)."""
    try:
        yield
    except OndeckError as exc:
        raise FormError(exc) from None


def action_response(
    request: Request,
    *,
    ok_message: str,
    next_url: str,
    partial: Callable[[], HTMLResponse] | None = None,
) -> Response:
    """After a successful POST: the partial for htmx (with the flash swapped in out of band),
    otherwise a 303 back to the page (post/redirect/get), the message in a one-time cookie."""
    if is_htmx(request) and partial is not None:
        swapped = partial()
        flash = _env.get_template("_flash.html").render(flash=ok_message, flash_kind="ok", oob=True)
        swapped.body = bytes(swapped.body) + flash.encode()
        swapped.headers["content-length"] = str(len(swapped.body))
        return swapped
    response = redirect(next_url)
    response.set_cookie(
        auth.FLASH_COOKIE,
        auth.guard_of(request).sign_flash(ok_message),
        max_age=60,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


def error_page(request: Request, exc: FormError) -> Response:
    """A refused form or a missing item: the message in place for htmx, else a page."""
    if is_htmx(request):
        return flash_fragment(request, str(exc), "error", status=exc.status)
    return render(
        request, "error.html", {"status": exc.status, "message": str(exc)}, status=exc.status
    )


def or_error_page(
    request: Request, page: Callable[..., Response], *args: Any, **kwargs: Any
) -> Response:
    """`page(request, *args, **kwargs)`; or, when it finds its item missing, the error page."""
    try:
        return page(request, *args, **kwargs)
    except FormError as exc:
        return error_page(request, exc)


def done_message(request: Request) -> str | None:
    """The message the last POST left for the page it redirected to: shown once (the
    cookie is cleared with this response), and only if this server signed it."""
    if is_htmx(request):
        return None
    value = request.cookies.get(auth.FLASH_COOKIE)
    if not value:
        return None
    request.state.flash_shown = True
    return auth.guard_of(request).read_flash(value)
