"""Keep credentials out of everything a user or a log can read.

Keys reach a provider from arguments, config files and the environment; they can come
back in a server's error body (a 401 that echoes the key), in a URL's ``user:pass@``
part, or in an exception's text. Every message, repr and result the providers build
goes through :func:`redact`, which removes the secrets the caller names and anything
shaped like a credential: bearer tokens, ``sk-``-style keys, ``api_key=`` pairs and URL
user info. :func:`safe_url` is a URL fit to show; :func:`fingerprint` identifies a key
(for connection keys) without revealing it.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from collections.abc import Iterable

from pydantic import SecretStr

__all__ = ["REDACTED", "as_secret", "fingerprint", "redact", "safe_url", "split_url_credentials"]

REDACTED = "***"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # user:password@ in any URL
    (re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@"), REDACTED + "@"),
    # Authorization-style values: "Bearer abc", "Basic abc"
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}"), r"\1 " + REDACTED),
    # OpenAI-, Anthropic- and similar keys
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}"), REDACTED),
    # api_key=..., "api-key": "...", x-api-key: ...
    (
        re.compile(r"""(?i)(?<![A-Za-z])((?:x-)?api[-_]?key["']?\s*[:=]\s*["']?)[^\s"',;&}]{4,}"""),
        r"\1" + REDACTED,
    ),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret in ``secrets`` and every credential-shaped token replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def split_url_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``url`` without its ``user:pass@`` part, and the user and password it carried."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    clean = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    user = urllib.parse.unquote(parts.username) if parts.username is not None else None
    password = urllib.parse.unquote(parts.password) if parts.password is not None else None
    return clean, user, password


def safe_url(url: str | None) -> str:
    """``url`` fit to show: without user info, and with credential-shaped query values hidden."""
    if not url:
        return ""
    return redact(split_url_credentials(url)[0])


def fingerprint(secret: str | None) -> str:
    """A short stable identifier of ``secret`` (``-`` for none); the secret cannot be read back."""
    if not secret:
        return "-"
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()[:12]


def as_secret(value: str | SecretStr | None) -> SecretStr | None:
    """``value`` wrapped so that reprs and logs never show it (``None`` stays ``None``)."""
    if value is None or isinstance(value, SecretStr):
        return value
    return SecretStr(value)
