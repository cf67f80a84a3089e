"""The subscriptions: managing them, their signing secrets, the resealing of those secrets and
the limit on how many an organization holds."""
