"""A webhook receiver: checks the signature, drops repeats, answers at once, works after.

Run:  WEBHOOK_SECRET=<your secret> PORT=8080 python3 receiver.py
Serve it behind TLS: webhooks are only ever sent to https:// URLs.
"""

import hashlib
import hmac
import json
import os
import queue
import threading
import traceback
from email.message import Message
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

SECRET = os.environ["WEBHOOK_SECRET"].encode()
work: queue.Queue[tuple[str, bytes]] = queue.Queue()
seen: set[str] = set()  # in production: a unique key on the delivery id where you keep work


def signed_with_secret(raw_body: bytes, signature: str | None) -> bool:
    # Hash the bytes exactly as received: never a re-serialised copy of the parsed JSON.
    expected = "sha256=" + hmac.new(SECRET, raw_body, hashlib.sha256).hexdigest()
    # compare_digest takes the same time wherever the two values differ.
    return signature is not None and hmac.compare_digest(expected.encode(), signature.encode())


def is_authentic(raw_body: bytes, headers: Message) -> bool:
    # While a secret is rotated, X-Service-Signature is made with the new secret and
    # X-Service-Signature-Previous with the old one: either one matching yours is enough, so
    # you can switch WEBHOOK_SECRET to the new secret at any time during the grace period.
    return signed_with_secret(raw_body, headers.get("X-Service-Signature")) or (
        signed_with_secret(raw_body, headers.get("X-Service-Signature-Previous"))
    )


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
        # The same delivery can come again (a retry after a timeout, a Redeliver): answer it
        # with a 2xx, so that hangar stops sending it, but handle it only once.
        delivery_id = self.headers.get("X-Service-Delivery", "")
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
