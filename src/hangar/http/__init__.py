"""HTTP, the server's side: the server protocol and its limits, the client's address behind
trusted proxies, the access log and what it may never hold, the request metrics, and the two
operators' endpoints (health, metrics). Features never import it."""
