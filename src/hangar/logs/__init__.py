"""hangar's logs: one configuration for every process (`formats`), in text (as it always
was) or JSON (HANGAR_LOG_FORMAT=json), and the request id every request is served under
(`request_id`). What may never be logged is decided in hangar.http.access_log."""
