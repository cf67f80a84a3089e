"""/api/session/two-factor: a person's own second factor (interfaces.md §9). Turning it on
and off needs the session (and its CSRF token); verifying a code needs the challenge cookie
that POST /api/session set when the password was right. The actions are
accounts/second_factor.py's, shared with the screens."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import Field, model_validator
from starlette.responses import Response

from hangar.accounts import second_factor
from hangar.auth import challenges, sessions
from hangar.http.access import csrf_if_signed_in, current_session, set_session_cookie
from hangar.http.responses import json_response
from hangar.http.routing import JsonRoute, ServicesDep, client_of
from hangar.kit.bodies import RequestBody

router = APIRouter(prefix="/api/session/two-factor", include_in_schema=False, route_class=JsonRoute)
SignedIn = Annotated[sessions.SignedIn, Depends(current_session)]


class Code(RequestBody):
    code: str = Field(min_length=1, max_length=20)


class CodeOrRecoveryCode(RequestBody):
    code: str | None = Field(default=None, min_length=1, max_length=20)
    recovery_code: str | None = Field(default=None, min_length=1, max_length=40)

    @model_validator(mode="after")
    def _one_of_them(self) -> CodeOrRecoveryCode:
        if (self.code is None) == (self.recovery_code is None):
            raise ValueError("give either code or recovery_code")
        return self


@router.post("")
async def enrol(services: ServicesDep, signed_in: SignedIn) -> Response:
    made = await second_factor.enrol(services, signed_in)
    return json_response(
        {"secret": made.secret, "otpauth_uri": made.otpauth_uri, "qr_svg": made.qr_svg}
    )


@router.post("/confirm")
async def confirm(services: ServicesDep, signed_in: SignedIn, body: Code) -> Response:
    codes = await second_factor.confirm_enrolment(services, signed_in, body.code)
    return json_response({"recovery_codes": codes})


@router.delete("", status_code=204)
async def turn_off(
    services: ServicesDep, signed_in: SignedIn, body: CodeOrRecoveryCode
) -> Response:
    await second_factor.turn_off(
        services, signed_in, code=body.code, recovery_code=body.recovery_code
    )
    return Response(status_code=204)


# No session yet, as for POST /api/session; a browser that has one still sends its CSRF token.
@router.post("/verify", dependencies=[Depends(csrf_if_signed_in)])
async def verify(request: Request, services: ServicesDep, body: CodeOrRecoveryCode) -> Response:
    new = await second_factor.verify_second_factor(
        services,
        request.cookies.get(challenges.CHALLENGE_COOKIE),
        client_of(request),
        code=body.code,
        recovery_code=body.recovery_code,
    )
    response = json_response(new.view)
    set_session_cookie(response, services, new.token)
    response.delete_cookie(challenges.CHALLENGE_COOKIE, path="/")
    return response
