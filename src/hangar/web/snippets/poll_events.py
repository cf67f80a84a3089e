"""Catch up on hangar's events after downtime, then keep polling: each event once, in order.

Run:  HANGAR_BASE_URL=https://hangar.example HANGAR_API_KEY=svc_pk_... python3 poll_events.py
The key needs the read:events scope. The position is kept in hangar-events.json (or the file
STATE_FILE names): stopped and started again, it carries on where it stopped.
"""

import json
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

BASE_URL = os.environ["HANGAR_BASE_URL"].rstrip("/")
KEY = os.environ["HANGAR_API_KEY"]
STATE_FILE = os.environ.get("STATE_FILE", "hangar-events.json")
# Idle, a call every 5 s is 720 an hour: inside the key's 60 a minute and 1000 an hour.
IDLE_SECONDS = float(os.environ.get("POLL_SECONDS", "5"))
LIMIT = 100


def load_state() -> dict[str, Any]:
    try:
        with open(STATE_FILE) as file:
            state: dict[str, Any] = json.load(file)
            return state
    except FileNotFoundError:  # the first run: from the oldest event hangar keeps
        return {"after": None, "created_after": None, "last_created_at": None}


def save_state(state: dict[str, Any]) -> None:
    # Written whole, then renamed over the old one: a crash never leaves half a file.
    with open(STATE_FILE + ".tmp", "w") as file:
        json.dump(state, file)
    os.replace(STATE_FILE + ".tmp", STATE_FILE)


def fetch_page(state: dict[str, Any]) -> dict[str, Any]:
    # A cursor is bound to the filters it came with: send the same created_after each time.
    query = {name: state[name] for name in ("after", "created_after") if state[name]}
    request = urllib.request.Request(  # noqa: S310 - hangar's address, not user input
        f"{BASE_URL}/api/v1/external/events?{urllib.parse.urlencode({'limit': LIMIT, **query})}",
        headers={"Authorization": f"Bearer {KEY}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        page: dict[str, Any] = json.load(response)
        return page


def handle(event: dict[str, Any]) -> None:
    # Your work goes here: event["data"] is what the event's webhook deliveries carry.
    print(event["id"], event["event"], event["created_at"], flush=True)


def seconds_until_next(period: int) -> float:
    # The limits count per calendar minute and hour; the jitter keeps workers apart.
    return period - time.time() % period + random.uniform(0, 2)


def main() -> None:
    state = load_state()
    handled: set[str] = set()  # in production: a unique key on the id where your work is kept
    failures = 0
    while True:
        try:
            page = fetch_page(state)
        except urllib.error.HTTPError as error:
            if error.code == 410:  # CURSOR_EXPIRED: start again from when it stopped
                since = state["last_created_at"]
                state = {"after": None, "created_after": since, "last_created_at": since}
                continue
            if error.code == 429:  # RATE_LIMITED: the detail names the minute or the hour
                detail = error.read().decode("utf-8", "replace")
                time.sleep(seconds_until_next(3600 if "hour" in detail else 60))
                continue
            if error.code < 500:
                raise  # 400, 401, 403, 422: retrying the same request cannot succeed
            failures += 1
            time.sleep(min(60, 2**failures) * random.uniform(0.5, 1))
            continue
        except OSError:  # no answer: back off and try again
            failures += 1
            time.sleep(min(60, 2**failures) * random.uniform(0.5, 1))
            continue
        failures = 0
        for event in page["items"]:
            # Drop duplicates by id: the X-Service-Event-Id of the event's webhook deliveries.
            if event["id"] not in handled:
                handled.add(event["id"])
                handle(event)
            state["last_created_at"] = event["created_at"]
        state["after"] = page["next_cursor"]  # on every page, the last one too: keep it
        save_state(state)
        if len(page["items"]) < LIMIT:
            time.sleep(IDLE_SECONDS)  # a short page: caught up for now


if __name__ == "__main__":
    main()
