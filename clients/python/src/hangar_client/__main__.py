"""`python -m hangar_client listen ...`: the same as the `hangar-client` command."""

from hangar_client.cli import main

raise SystemExit(main())
