"""What became of an attempt, in one sentence for the person reading the delivery log.

The sender classifies every attempt into a fixed kind (and a short detail: the Location of a
redirect, the host a certificate does not match); the sentence is made from that here, when
the log is read, for the screen and the JSON API alike. Exception class names ("TLS error:
ClientConnectorCertificateError") tell an administrator nothing they can act on.
"""

from __future__ import annotations

import ssl
from http import HTTPStatus
from typing import Literal

from hangar.foundation.metrics import AttemptOutcome

AttemptKind = Literal[
    "delivered",  # a 2xx answer
    "redirect",  # a 3xx answer: refused, never followed
    "http_error",  # any other answer
    "timeout",
    "tls_expired",
    "tls_untrusted",
    "tls_wrong_host",
    "tls_failed",  # any other TLS failure
    "connection_refused",
    "name_unresolved",
    "connection_failed",  # any other failure to connect or to read the answer
    "url_private",  # the address policy refused the URL at the attempt
    "url_http",
    "url_invalid",
    # Only in attempts recorded by earlier releases: a secret no key opens is now held, never
    # an attempt (hangar.webhooks.delivery.attempting.Attempter._hold).
    "secret_unreadable",
]

# The metrics' coarser outcome of each kind (their label values must not change).
OUTCOMES: dict[AttemptKind, AttemptOutcome] = {
    "delivered": "succeeded",
    "redirect": "http_error",
    "http_error": "http_error",
    "timeout": "timeout",
    "tls_expired": "tls_error",
    "tls_untrusted": "tls_error",
    "tls_wrong_host": "tls_error",
    "tls_failed": "tls_error",
    "connection_refused": "connection_error",
    "name_unresolved": "url_refused",
    "connection_failed": "connection_error",
    "url_private": "url_refused",
    "url_http": "url_refused",
    "url_invalid": "url_refused",
    "secret_unreadable": "secret_unreadable",
}

# The kinds of attempt that sent no request (the URL refused before connecting, or no secret
# to sign with): their durations say nothing of how the receiver answers.
NOTHING_SENT: frozenset[AttemptKind] = frozenset(
    kind for kind, outcome in OUTCOMES.items() if outcome in ("url_refused", "secret_unreadable")
)

# OpenSSL's X509_V_ERR_* codes, as ssl.SSLCertVerificationError.verify_code carries them.
_EXPIRED = frozenset({9, 10})  # not yet valid, expired: outside the certificate's dates
_WRONG_HOST = frozenset({62, 64})  # host name, IP address mismatch
_UNTRUSTED = frozenset({2, 18, 19, 20, 21, 27, 28})  # no trusted issuer, self-signed, rejected


def kind_of_http(status: int) -> AttemptKind:
    if 200 <= status < 300:
        return "delivered"
    return "redirect" if 300 <= status < 400 else "http_error"


def kind_of_tls(error: BaseException | None) -> AttemptKind:
    """The kind of a TLS failure, from the verification error's OpenSSL code."""
    if not isinstance(error, ssl.SSLCertVerificationError):
        return "tls_failed"
    code = error.verify_code
    if code in _EXPIRED:
        return "tls_expired"
    if code in _WRONG_HOST:
        return "tls_wrong_host"
    return "tls_untrusted" if code in _UNTRUSTED else "tls_failed"


def status_line(status: int, reason: str | None) -> str:
    """`503 Service Unavailable`: the receiver's own reason phrase, or the standard one."""
    if not reason:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    return f"{status} {reason}".rstrip()


def explain(
    kind: str | None,
    detail: str | None,
    status_code: int | None,
    reason: str | None,
    error: str | None,
) -> str:
    """The sentence for one attempt. `kind` is None for attempts recorded before kinds were."""
    if kind is None:
        if status_code is not None:
            kind = kind_of_http(status_code)
        else:
            return f"The attempt failed: {error}." if error else "No details were recorded."
    if status_code is not None:
        answered = status_line(status_code, reason)
        if kind == "delivered":
            return f"Delivered: the receiver answered {answered}."
        if kind == "redirect":
            where = f" to {detail}" if detail else ""
            return (
                f"Redirect refused: the receiver answered {answered}{where}; "
                "redirects are never followed."
            )
        if 500 <= status_code < 600:
            return f"The receiver failed with {answered}."
        if 400 <= status_code < 500:
            return f"The receiver refused the delivery with {answered}."
        return f"The receiver answered {answered}, which is not a success."
    return _FAILURES.get(kind, "The attempt failed{detail}.").format(
        detail=f": {detail}" if detail else "", seconds=detail or "10"
    )


_FAILURES: dict[str, str] = {
    "timeout": "No answer within {seconds} s: the attempt was abandoned.",
    "tls_expired": (
        "Certificate expired: the receiver's TLS certificate is outside its validity dates."
    ),
    "tls_untrusted": (
        "Certificate not trusted: the receiver's TLS certificate is not issued by a trusted "
        "certificate authority (self-signed, or an intermediate certificate is missing)."
    ),
    "tls_wrong_host": (
        "Wrong host name: the receiver's TLS certificate is not valid for the URL's host."
    ),
    "tls_failed": "The TLS handshake with the receiver failed{detail}.",
    "connection_refused": (
        "Connection refused: nothing accepts connections at the receiver's address and port."
    ),
    "name_unresolved": "The host name did not resolve: nothing was sent.",
    "connection_failed": "The connection to the receiver failed{detail}.",
    "url_private": (
        "URL refused by the address policy: the host is or resolves to a private or internal "
        "address. Nothing was sent."
    ),
    "url_http": "URL refused by the address policy: only https URLs are allowed. Nothing was sent.",
    "url_invalid": "URL refused by the address policy{detail}. Nothing was sent.",
    "secret_unreadable": (
        "Not sent: the signing secret cannot be decrypted (was HANGAR_SECRET_KEY changed "
        "without listing the old key in HANGAR_SECRET_KEY_PREVIOUS?)."
    ),
}
