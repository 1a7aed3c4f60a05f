"""The settings a session hook needs, read without pydantic.

A hook cannot afford pydantic-settings (host/quick_settings.py says what a hook's process may
cost), so hooks read their settings here: the environment (`ONDECK_*`, any case) over the
TOML file, as `config.Settings` reads them. Anything this reader is not sure of (a value of
an unexpected type or form, a key in another case) makes it give up (`None`), and the
caller reads the full settings instead, which accept or refuse the value with their own
message: so the two can never disagree on a value they both accept, and
tests/unit/test_hook_config.py holds them together. A module apart from both, so that
neither the record nor the full settings imports the other.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta

from ondeck.host.quick_settings import (
    FIELDS,
    LEASE_GRACE_MAX,
    PORT_MAX,
    RULE_FIELDS,
    SESSION_GRACE_MAX,
    SESSION_GRACE_MIN,
    TICK_SECONDS_MAX,
    HookConfig,
    Unsure,
    str_list,
    str_map,
    text_of,
)
from ondeck.host.quick_settings_rules import (
    absolute_text,
    check_database_url,
    check_server_url,
    check_token,
    config_file,
    default_data_dir,
    rules_problem,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ondeck.host.settings import Settings


def load_hook_config(database_url: str | None = None) -> HookConfig:
    """The hook's settings: read quickly when they are plain, else by `config.load_settings`
    (which raises `ConfigError` for a value nobody can use)."""
    quick = read_quickly(database_url)
    if quick is not None:
        return quick
    from ondeck.host.settings import load_settings

    return hook_config_of(load_settings(database_url=database_url))


def hook_config_of(settings: Settings) -> HookConfig:
    """The full settings as the hooks hold them (tables and lists copied)."""
    values = {name: _copied(getattr(settings, name)) for name in FIELDS}
    values["database_url"] = settings.database_url or None
    values["data_dir"] = str(settings.data_dir)
    values["token"] = settings.token_value
    return HookConfig(**values)


def _copied(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def read_quickly(database_url: str | None = None) -> HookConfig | None:
    """The settings from the environment and the TOML file, or None when unsure."""
    try:
        raw = _raw_values()
        if database_url:
            raw["database_url"] = database_url
        return _build(raw)
    except Unsure:
        return None


def _raw_values() -> dict[str, Any]:
    values: dict[str, Any] = {}
    try:
        path = config_file()
    except ValueError:
        raise Unsure from None
    if path is not None and os.path.lexists(path) and not os.path.isfile(path):
        raise Unsure  # the full settings say what is wrong with it
    if path is not None and os.path.isfile(path):
        import tomllib

        try:
            with open(path, "rb") as handle:
                document = tomllib.load(handle)
        except (OSError, ValueError):
            raise Unsure from None
        for key, value in document.items():
            if key in FIELDS:
                values[key] = value
            elif key.lower() in FIELDS:  # another spelling: how pydantic reads it is its call
                raise Unsure
    env: dict[str, str] = {}
    for name, value in os.environ.items():
        lowered = name.lower()
        if lowered.startswith("ondeck_"):
            key = lowered.removeprefix("ondeck_")
            if key in FIELDS:
                if key in env:  # the same setting twice, in two cases: let pydantic choose
                    raise Unsure
                env[key] = value
    for key, value in env.items():
        if key in RULE_FIELDS:
            try:
                values[key] = json.loads(value)
            except ValueError:
                raise Unsure from None
        else:
            values[key] = value
    return values


def _build(raw: dict[str, Any]) -> HookConfig:
    kwargs: dict[str, Any] = {}
    if "database_url" in raw:
        kwargs["database_url"] = _checked(check_database_url, text_of(raw["database_url"]))
    kwargs["data_dir"] = _checked(absolute_text, text_of(raw.get("data_dir", default_data_dir())))
    if "server_url" in raw:
        kwargs["server_url"] = _checked(check_server_url, text_of(raw["server_url"]))
    if "host" in raw:
        kwargs["host"] = text_of(raw["host"])
    if "port" in raw:
        kwargs["port"] = _whole(raw["port"], 0, PORT_MAX)
    if "token" in raw:
        given = text_of(raw["token"])
        kwargs["token"] = _checked(check_token, given) if given else None
    if "tz" in raw:
        kwargs["tz"] = text_of(raw["tz"])  # checked where used (HookConfig.zone)
    if "lease_grace" in raw:
        lease_grace = _duration(raw["lease_grace"])
        if lease_grace > LEASE_GRACE_MAX:  # the full settings word the refusal
            raise Unsure
        kwargs["lease_grace"] = lease_grace
    if "session_grace" in raw:
        grace = _duration(raw["session_grace"])
        # Out of bounds: the full settings word the refusal.
        if not SESSION_GRACE_MIN <= grace <= SESSION_GRACE_MAX:
            raise Unsure
        kwargs["session_grace"] = grace
    if "tick_seconds" in raw:
        kwargs["tick_seconds"] = _seconds(raw["tick_seconds"])
    if "projects" in raw:
        kwargs["projects"] = str_map(raw["projects"])
    if "sides" in raw:
        sides = raw["sides"]
        if not isinstance(sides, dict):
            raise Unsure
        kwargs["sides"] = {text_of(k): str_list(v) for k, v in sides.items()}
    if "remotes" in raw:
        remotes = raw["remotes"]
        if not isinstance(remotes, dict):
            raise Unsure
        kwargs["remotes"] = {text_of(k): str_map(v) for k, v in remotes.items()}
    for key in ("no_capture", "private_globs"):
        if key in raw:
            kwargs[key] = str_list(raw[key])
    config = HookConfig(**kwargs)
    if rules_problem(config.projects, config.sides, config.remotes) is not None:
        raise Unsure
    for prefix in [
        *config.projects,
        *(p for ps in config.sides.values() for p in ps),
        *config.no_capture,
    ]:
        _checked(absolute_text, prefix)
    return config


def _checked(check: Callable[[str], str], value: str) -> str:
    try:
        return check(value)
    except ValueError:
        raise Unsure from None


def _whole(value: Any, low: int, high: int) -> int:
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit() and len(value) <= 9):
            raise Unsure
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise Unsure
    return value


def _seconds(value: Any) -> float:
    import math

    if isinstance(value, str):
        whole, _, fraction = value.partition(".")
        plain = whole.isascii() and whole.isdigit() and (not fraction or fraction.isdigit())
        if not plain or len(value) > 20:  # no signs, exponents, spaces or words: plain numbers
            raise Unsure
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsure
    if not math.isfinite(value) or not 0 < value <= TICK_SECONDS_MAX:
        raise Unsure
    return float(value)


def _duration(value: Any) -> timedelta:
    from ondeck.core.durations import parse_duration
    from ondeck.core.errors import InvalidInput

    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise Unsure
    try:
        return parse_duration(value, name="duration")
    except InvalidInput:
        raise Unsure from None
