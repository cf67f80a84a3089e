"""The delivery engine: the queue's states, the claims, the dispatcher, the sender and its
signatures, retries, outcomes and alerts, the worker, pruning, Redeliver and Recover."""
