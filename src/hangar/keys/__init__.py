"""An organization's API keys: issuing, and the list/create/rotate/revoke actions that the
management API and the Org Settings screens share."""
