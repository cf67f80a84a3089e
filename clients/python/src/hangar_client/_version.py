"""The client's version (semantic: a minor version adds, never breaks). 1.2.0 added the
events API (`client.events`) and the `hangar-client listen` command."""

VERSION = "1.2.0"
