"""The kit: the plumbing every feature shares, and nothing else, free of the web framework.

The services a process holds (container), JSON as hangar writes it (encoding), the public
schema base, query parameter types, request bodies, named errors, organization scoping (one
`OrgOwned`, and the `KeyContext` a read is for), the scopes an API key may carry, the
commands' row helpers, signed cursors, rate limits, batched deletes, the host-name resolver.

The rule: the kit imports the foundation (db, config, clock, ids, crypto) and libraries, never
a feature, HTTP, the screens or the process wiring. `lint-imports` (run by `./dev test`)
checks it.
"""
