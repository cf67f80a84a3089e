"""Where a webhook may go: the parsing of its URL and the policy on its address."""
