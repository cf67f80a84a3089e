"""The events: their catalogue and schemas, the outbox that records them with the change that
caused them, and the event log the public API reads."""
