"""How an invitation's link reaches its person: mailed, or handed over by whoever invited.

Whoever holds the link can make the invited email's account (while it has none) and join as
that person. With HANGAR_SMTP_URL and HANGAR_MAIL_FROM set, the link goes to the invited
mailbox only, and whoever invited learns only whether it was sent: the admin of an
organization never holds a link for someone else's email. Without them (a trial, a club
without a mail server), the link is shown once to whoever invited, to hand over.

The mail is sent after the invitation is committed: a mail that fails loses no invitation,
and answers 201 like any other, with `invitation_sent: false` and what happened; the admin
removes the pending member and invites again to send a new link (hangar keeps only the
link's hash, so the same link cannot be sent twice). Nothing here logs the link.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime

from hangar.foundation.config import Settings
from hangar.foundation.mail import Mail, NotSent, mailer_of
from hangar.kit import ratelimit
from hangar.kit.container import Services
from hangar.kit.errors import RateLimited
from hangar.kit.ratelimit import Budget, Limit
from hangar.orgs import invitations
from hangar.orgs.members import HandedOver, Invited

log = logging.getLogger(__name__)

# What an admin can make hangar mail: invite, remove and invite again must not become a way
# to flood someone's mailbox through the operator's mail server (and its reputation).
MAIL_TO_LIMITS = (Limit(3, 3600, "3 invitation mails an hour to one address"),)
MAIL_FROM_ORG_LIMITS = (Limit(100, 86400, "100 invitation mails a day from one organization"),)


def mail_budgets(org_id: uuid.UUID, email: str) -> tuple[Budget, ...]:
    return (
        (f"mail:to:{email.strip().lower()}", MAIL_TO_LIMITS),
        (f"mail:org:{org_id}", MAIL_FROM_ORG_LIMITS),
    )


async def take_mail_budget(
    services: Services, org_id: uuid.UUID, email: str, now: datetime
) -> tuple[Budget, ...]:
    """The budgets one invitation mail spends, taken before the invitation is made (429 with
    `Retry-After` when one is spent, and nothing is made); none without mail configured:
    the link is then shown, not sent."""
    if mailer_of(services.settings) is None:
        return ()
    budgets = mail_budgets(org_id, email)
    refused = await ratelimit.take(services.limiter, budgets, now)
    if refused is not None:
        raise RateLimited(
            f"Too many invitation mails: {refused.label}. Try again later",
            retry_after=refused.resets_in(now),
        )
    return budgets


def invitation_mail(invited: Invited, url: str, now: datetime) -> Mail:
    member, expires = invited.member, invited.invitation.expires_at
    body = (
        f"You are invited to join {invited.org_name} as {member.role}.\n"
        "\n"
        "Open this link to accept:\n"
        "\n"
        f"{url}\n"
        "\n"
        "New to hangar? You choose your password there. Already have an account with "
        f"{member.email}? Sign in with it on that page to accept.\n"
        "\n"
        f"The link works once, until {expires:%Y-%m-%d %H:%M} UTC. If you did not expect "
        "this invitation, ignore this message: nothing changes unless you accept.\n"
    )
    return Mail(member.email, f"Invitation to join {invited.org_name}", body, now)


@dataclass(frozen=True)
class Handover:
    """What became of an invitation's link: mailed (`sent`), not mailed for `why`, or, with
    no mail configured (`sent` None), to be handed over by whoever invited."""

    url: str
    sent: bool | None
    why: str | None = None

    def for_admin(self, email: str) -> HandedOver:
        """The answer's fields for an organization's admin: the link only when no mail is
        configured; otherwise whether it was sent, never the link."""
        if self.sent is None:
            return {"invitation_url": self.url}
        if self.sent:
            return {"invitation_sent": True}
        return {
            "invitation_sent": False,
            "invitation_error": (
                f"The invitation is saved, but the email to {email} was not sent: {self.why}. "
                "Remove this pending member and invite them again to send a new link."
            ),
        }


async def hand_over(settings: Settings, invited: Invited, now: datetime) -> Handover:
    """Mails the invitation's link when mail is configured. Call it after the invitation is
    committed."""
    url = invitations.link(settings.public_url, invited.invitation.token)
    mailer = mailer_of(settings)
    if mailer is None:
        return Handover(url, sent=None)
    try:
        await mailer.send(invitation_mail(invited, url, now))
    except NotSent as why:
        # By the membership's id: neither the link nor the address belongs in a log.
        membership = invited.member.membership_id
        log.warning("invitation mail not sent (membership %s): %s", membership, why)
        return Handover(url, sent=False, why=str(why))
    return Handover(url, sent=True)
