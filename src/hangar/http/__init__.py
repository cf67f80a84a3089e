"""HTTP, the server's side, for the JSON routes, the public API and the screens alike: the
server and the protocol that bounds each client, size and time limits, the client's address
behind trusted proxies, the access log and what it may never hold, request metrics, HEAD
answered as GET, gzip for the one response that takes it (the feed); the routes' plumbing
(JsonRoute, ServicesDep, Tx, Now, path ids), the request's Actor and session (access), JSON
responses and the error handlers; and the operators' endpoints (health, GET /metrics). No
feature imports it."""
