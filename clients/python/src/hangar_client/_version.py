"""The client's version (semantic: a minor version adds, never breaks). 1.2.0 added the
events API (`client.events`) and the `hangar-client listen` command; 1.3.0 typed errors for
every failure (a bad key, no answer, a proxy's page) and retries of 502, 504 and connection
failures as well as 429 and 503, with `max_retries`, `on_retry` and `with_options`; 1.3.1
`hangar-client listen` prints what a server or receiver says with its control and format
characters escaped; 1.4.0 `verify_delivery` refuses replays (the Standard Webhooks signature
too, within 5 minutes) and `SeenDeliveries` drops repeats by the signed `webhook-id`; 1.5.0
`organization()` (which organization the key belongs to) and `organization_of(headers)` (the
`X-Service-Organization` of a delivery)."""

VERSION = "1.5.0"
