"""The delivery log's filters: by status, by event, by event id, by resource and by when
the delivery was queued, each alone or with the others; checked, with a sentence for each
value that is wrong (a 422 from the API, the form's errors on the screen)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from hangar.foundation.ids import parse_id
from hangar.kit.errors import ApiError
from hangar.kit.params import parse_aware_datetime
from hangar.webhooks.events.catalogue import EVENT_NAMES, TEST_PING
from hangar.webhooks.models import DELIVERY_STATUSES

# What the log can be filtered by: a delivery's states, and what a delivery can carry (the
# catalogue's events and the Test action's ping).
STATUSES = DELIVERY_STATUSES
LOGGED_EVENTS = (*EVENT_NAMES, TEST_PING)


@dataclass(frozen=True)
class LogFilters:
    """Which deliveries the log lists; None: any. The ids and times are kept as given (the
    page links repeat them so); `LogFilters.of` reads them."""

    status: str | None = None
    event: str | None = None
    event_id: str | None = None
    resource_id: str | None = None
    since: str | None = None  # RFC 3339 with an offset; the queued time, inclusive
    until: str | None = None  # exclusive

    @classmethod
    def of(
        cls,
        status: str | None = None,
        event: str | None = None,
        event_id: str | None = None,
        resource_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> LogFilters:
        """The filters as given, "" read as none; check them with filter_problems first."""
        return cls(
            status or None, event or None, event_id or None, resource_id or None,
            since or None, until or None,
        )  # fmt: skip

    def query(self, before: str | None = None) -> dict[str, str]:
        """The query parameters of a page of the log under these filters."""
        given = {
            "status": self.status,
            "event": self.event,
            "event_id": self.event_id,
            "resource_id": self.resource_id,
            "since": self.since,
            "until": self.until,
            "before": before,
        }
        return {name: value for name, value in given.items() if value is not None}

    @property
    def event_uuid(self) -> uuid.UUID | None:
        return None if self.event_id is None else parse_id(self.event_id)

    @property
    def resource_uuid(self) -> uuid.UUID | None:
        return None if self.resource_id is None else parse_id(self.resource_id)

    @property
    def finds_nothing(self) -> bool:
        """An id given that no id of ours can be: nothing to read."""
        return (self.event_id is not None and self.event_uuid is None) or (
            self.resource_id is not None and self.resource_uuid is None
        )

    @property
    def times(self) -> tuple[datetime | None, datetime | None]:
        """since and until in UTC; checked already (filter_problems)."""
        return (
            None if self.since is None else parse_aware_datetime(self.since),
            None if self.until is None else parse_aware_datetime(self.until),
        )


def _time_problem(text: str) -> str | None:
    try:
        parse_aware_datetime(text)
    except ValueError as exc:
        return str(exc)
    return None


def filter_problems(
    status: str | None,
    event: str | None,
    event_id: str | None = None,
    resource_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, str]:
    """What is wrong with each filter value given ("" and None: no filter), by its name. An
    id that is no UUID is not wrong: it finds nothing (LogFilters.finds_nothing)."""
    del event_id, resource_id  # any text is a search
    problems = {}
    if status and status not in STATUSES:
        problems["status"] = (
            f"{status!r} is not a delivery status: choose pending, succeeded, failed or skipped."
        )
    if event and event not in LOGGED_EVENTS:
        problems["event"] = (
            f"{event!r} is not an event of the catalogue (nor test.ping): choose one of "
            "those listed."
        )
    for name, text in (("since", since), ("until", until)):
        if text and (problem := _time_problem(text)) is not None:
            problems[name] = f"{name}: {problem}."
    both_read = since and until and not {"since", "until"} & set(problems)
    if both_read and parse_aware_datetime(since or "") > parse_aware_datetime(until or ""):
        problems["until"] = "until is before since: it must be the same moment or later."
    return problems


def log_filters(
    status: str | None,
    event: str | None,
    event_id: str | None = None,
    resource_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> LogFilters:
    """The filters as given, checked: 422 naming each bad value (UNKNOWN_EVENT when the
    event is the only one, as the events API says it; VALIDATION_ERROR otherwise)."""
    problems = filter_problems(status, event, event_id, resource_id, since, until)
    if problems:
        code = "UNKNOWN_EVENT" if set(problems) == {"event"} else "VALIDATION_ERROR"
        raise ApiError(
            422,
            code,
            " ".join(problems.values()),
            [{"loc": ["query", name], "msg": msg} for name, msg in problems.items()],
        )
    return LogFilters.of(status, event, event_id, resource_id, since, until)
