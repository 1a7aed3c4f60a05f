"""A URL as ondeck prints it: its secrets written `***`.

A database URL may carry its password as `user:secret@` or as a query option
(`?password=secret`, libpq's `sslpassword=`), and a URL someone types may hold a token. Every
place that shows a URL (a refusal, the System page, `service install --dry-run`, the context
a session is told, a log line) shows `shown(url)`, never the URL itself.

Standard library string methods only: the hook's settings check calls this on its path.
"""

from __future__ import annotations

HIDDEN = "***"
# A query option is a secret when its name says so (lowercase, `_` and `-` ignored):
# password, passwd, pwd, sslpassword, token, access_token, secret, client_secret, key,
# apikey, api_key, auth, signature.
_SECRET_WORDS = ("pass", "pwd", "token", "secret", "auth", "signature")
_SECRET_NAMES = ("key", "apikey", "accesskey", "privatekey", "sig", "credential")


def secret_option(name: str) -> bool:
    folded = name.lower().replace("_", "").replace("-", "")
    return folded in _SECRET_NAMES or any(word in folded for word in _SECRET_WORDS)


def shown(url: str) -> str:
    """`url` with the password of its user part and the values of its secret query options
    hidden; anything that is not a URL comes back as it is."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    # The authority ends at the first '/', '?' or '#'; its user part at its last '@'.
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    users, at, host = authority.rpartition("@")
    if at:
        user, colon, _password = users.partition(":")
        authority = f"{user}:{HIDDEN}@{host}" if colon else authority
    path, question, query = tail.partition("?")
    if question:
        query, hash_, fragment = query.partition("#")
        options = []
        for option in query.split("&"):
            name, equals, _value = option.partition("=")
            options.append(f"{name}={HIDDEN}" if equals and secret_option(name) else option)
        tail = f"{path}?{'&'.join(options)}{hash_}{fragment}"
    return f"{scheme}{sep}{authority}{tail}"
