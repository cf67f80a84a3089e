"""The JSON routes of the product's own API (interfaces.md): the session API, invitation
links, the management API (API keys, webhook subscriptions, members) and the product actions
(fleet, reservations, squawks, maintenance). Presentation only: each route checks who acts
(hangar.http.access), calls its feature's service and writes the answer; the app alone mounts
them. The public read API is hangar.external."""
