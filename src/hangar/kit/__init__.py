"""The kit: the plumbing every feature shares, and nothing else.

JSON responses, the public schema base, query parameter types, request bodies, named errors,
organization scoping (one `OrgOwned`), the row helpers of the commands, and the routes'
dependencies (services, path ids, one transaction per action).

The rule: the kit imports the foundation (db, config, clock, ids, crypto) and libraries, never a
feature, the web screens or the process wiring. `lint-imports` (run by `./dev test`) checks it.
"""
