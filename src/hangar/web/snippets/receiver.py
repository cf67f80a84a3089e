"""A webhook receiver that checks X-Service-Signature before trusting a delivery.

Run:  WEBHOOK_SECRET=<your secret> PORT=8080 python3 receiver.py
Serve it behind TLS: webhooks are only ever sent to https:// URLs.
"""

import hashlib
import hmac
import json
import os
from http.server import BaseHTTPRequestHandler, HTTPServer

SECRET = os.environ["WEBHOOK_SECRET"].encode()


def is_authentic(raw_body: bytes, signature: str | None) -> bool:
    # Hash the bytes exactly as received: never a re-serialised copy of the parsed JSON.
    expected = "sha256=" + hmac.new(SECRET, raw_body, hashlib.sha256).hexdigest()
    # compare_digest takes the same time wherever the two values differ.
    return signature is not None and hmac.compare_digest(expected.encode(), signature.encode())


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not is_authentic(raw, self.headers.get("X-Service-Signature")):
            self.send_response(401)
            self.end_headers()
            return
        envelope = json.loads(raw)
        # The same delivery can arrive twice (a retry after a timeout): drop repeats by id.
        print(self.headers.get("X-Service-Delivery"), envelope["event"], envelope["data"])
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8080"))), Receiver).serve_forever()
