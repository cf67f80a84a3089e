"""Prints the public API's OpenAPI document, as `GET /api/v1/external/openapi.json` serves it,
without a server or a database: the app is built (its engine connects lazily and is never
used) and its routes described. The TypeScript client's `npm run generate` reads it.

    .venv/bin/python scripts/openapi_json.py > openapi.json
    .venv/bin/python scripts/openapi_json.py --public-url https://hangar.example

The document's `servers` names `--public-url` (default hangar's own default); the generated
types do not depend on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys

from hangar.app import create_app
from hangar.external.openapi import build_openapi
from hangar.foundation.config import DEFAULT_PUBLIC_URL, Settings
from hangar.wiring.container import build_services


async def document(public_url: str = DEFAULT_PUBLIC_URL) -> dict[str, object]:
    settings = Settings(
        database_url="sqlite:///:memory:",
        # Never used to sign or read anything: the document is built from the routes alone.
        secret_key=secrets.token_urlsafe(32),
        public_url=public_url,
        service_domain="127.0.0.1",
    )
    services = build_services(settings)
    try:
        return build_openapi(create_app(services))
    finally:
        await services.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--public-url", default=DEFAULT_PUBLIC_URL)
    args = parser.parse_args()
    json.dump(asyncio.run(document(args.public_url)), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
