"""The session hooks' settings, loaded: by the quick reader (host/quick_settings.py, no
pydantic) when it vouches for every value, else by the full settings, which accept or
refuse each value with their own one line. A module of its own, so that neither of the
two imports the other."""

from __future__ import annotations

from ondeck.host.quick_settings import HookConfig, read_quickly

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
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
    """The full settings as the hooks hold them."""
    return HookConfig(
        database_url=settings.database_url or None,
        data_dir=str(settings.data_dir),
        host=settings.host,
        server_url=settings.server_url,
        port=settings.port,
        token=settings.token_value,
        tz=settings.tz,
        lease_grace=settings.lease_grace,
        session_grace=settings.session_grace,
        tick_seconds=settings.tick_seconds,
        projects=dict(settings.projects),
        sides={k: list(v) for k, v in settings.sides.items()},
        remotes={k: dict(v) for k, v in settings.remotes.items()},
        no_capture=list(settings.no_capture),
        private_globs=list(settings.private_globs),
    )
