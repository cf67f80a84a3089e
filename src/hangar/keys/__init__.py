"""An organization's API keys, in one home: their table, their format, authenticating a
request by one (authentication.py), issuing, and the list/create/rotate/revoke actions that
the management API, the Org Settings screens and the CLI share (service.py)."""
