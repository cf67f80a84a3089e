"""The row types (TypedDicts) the queries and actions return are their schemas' fields, in the
schemas' order: that order is the JSON's, and mypy checks the callers against the row types."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from pydantic import BaseModel
from sqlalchemy import select

from hangar.db.reads import Read
from hangar.fleet.models import Aircraft
from hangar.fleet.schemas import Aircraft as AircraftOut
from hangar.fleet.schemas import AircraftRow
from hangar.kit.schemas import field_names
from hangar.maintenance.schemas import MaintenanceLog, MaintenanceLogRow, WorkOrder, WorkOrderRow
from hangar.orgs.schemas import FullMemberRow, Member, MemberRow
from hangar.reservations.schemas import Reservation, ReservationRow
from hangar.squawks.schemas import Squawk, SquawkRow


@pytest.mark.parametrize(
    ("row", "schema"),
    [
        (ReservationRow, Reservation),
        (AircraftRow, AircraftOut),
        (SquawkRow, Squawk),
        (MaintenanceLogRow, MaintenanceLog),
        (WorkOrderRow, WorkOrder),
        (FullMemberRow, Member),
    ],
)
def test_a_row_type_names_its_schemas_fields_in_order(
    row: type[Any], schema: type[BaseModel]
) -> None:
    assert tuple(row.__annotations__) == field_names(schema)


def test_a_member_without_contact_fields_is_the_first_fields_of_one_with_them() -> None:
    names = tuple(FullMemberRow.__annotations__)
    assert names[: len(MemberRow.__annotations__)] == tuple(MemberRow.__annotations__)


class _TailOnly(TypedDict):
    tail_number: str


def test_a_read_refuses_a_row_type_its_statement_does_not_select() -> None:
    Read(select(Aircraft.tail_number), _TailOnly)
    with pytest.raises(TypeError, match="_TailOnly names tail_number; the statement selects id"):
        Read(select(Aircraft.id), _TailOnly)
    with pytest.raises(TypeError):
        Read(select(Aircraft.tail_number, Aircraft.id), _TailOnly)
