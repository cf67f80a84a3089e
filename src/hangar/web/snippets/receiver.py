"""A webhook receiver: checks both signatures and the time, drops repeats, answers at once,
works after.

Run:  WEBHOOK_SECRET=<your secret> PORT=8080 python3 receiver.py
Serve it behind TLS: webhooks are only ever sent to https:// URLs.
"""

import base64
import hashlib
import hmac
import json
import os
import queue
import threading
import time
import traceback
from email.message import Message
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

SECRET = os.environ["WEBHOOK_SECRET"].encode()
TOLERANCE_S = 5 * 60  # a delivery signed longer ago (or ahead) than this is refused
work: queue.Queue[tuple[str, bytes]] = queue.Queue()
seen: set[str] = set()  # in production: a unique key on the delivery id where you keep work


def signed_with_secret(raw_body: bytes, signature: str | None) -> bool:
    # Hash the bytes exactly as received: never a re-serialised copy of the parsed JSON.
    expected = "sha256=" + hmac.new(SECRET, raw_body, hashlib.sha256).hexdigest()
    # compare_digest takes the same time wherever the two values differ.
    return signature is not None and hmac.compare_digest(expected.encode(), signature.encode())


def signed_recently(raw_body: bytes, headers: Message) -> bool:
    # Standard Webhooks' signature covers webhook-id and webhook-timestamp as well as the
    # body: a copy sent again later is stale, and one given another id does not verify.
    webhook_id = headers.get("webhook-id", "")
    timestamp = headers.get("webhook-timestamp", "")
    if not webhook_id or not timestamp.isascii() or not timestamp.isdigit():
        return False
    if abs(time.time() - int(timestamp)) > TOLERANCE_S:
        return False
    signed = f"{webhook_id}.{timestamp}.".encode() + raw_body
    expected = "v1," + base64.b64encode(hmac.new(SECRET, signed, hashlib.sha256).digest()).decode()
    # Several space-separated signatures while a secret is rotated: one of yours is enough.
    given = headers.get("webhook-signature", "").split()
    return any(hmac.compare_digest(expected.encode(), g.encode()) for g in given)


def is_authentic(raw_body: bytes, headers: Message) -> bool:
    # While a secret is rotated, X-Service-Signature is made with the new secret and
    # X-Service-Signature-Previous with the old one: either one matching yours is enough, so
    # you can switch WEBHOOK_SECRET to the new secret at any time during the grace period.
    signed = signed_with_secret(raw_body, headers.get("X-Service-Signature")) or (
        signed_with_secret(raw_body, headers.get("X-Service-Signature-Previous"))
    )
    return signed and signed_recently(raw_body, headers)


def handle(delivery_id: str, envelope: dict[str, Any]) -> None:
    # Your work goes here, after the answer has gone.
    print(delivery_id, envelope["event"], json.dumps(envelope["data"]), flush=True)


def worker() -> None:
    while True:
        delivery_id, raw = work.get()
        try:
            handle(delivery_id, json.loads(raw))
        except Exception:  # one bad delivery must not stop the ones after it
            traceback.print_exc()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not is_authentic(raw, self.headers):
            self.answer(401)
            return
        # The same delivery can come again (a retry after a timeout, a Redeliver, a copy
        # replayed within the tolerance): answer it with a 2xx, so that hangar stops sending
        # it, but handle it only once. By webhook-id: the signature covers it.
        delivery_id = self.headers.get("webhook-id", "")
        if delivery_id not in seen:
            seen.add(delivery_id)
            work.put((delivery_id, raw))
        # At once: an answer later than 10 s is a failed attempt, and hangar sends it again.
        self.answer(204)

    def answer(self, status: int) -> None:
        self.send_response(status)
        self.end_headers()


if __name__ == "__main__":
    threading.Thread(target=worker, daemon=True).start()
    HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8080"))), Receiver).serve_forever()
