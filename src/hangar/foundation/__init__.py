"""The foundation every layer stands on, importing nothing of hangar's but itself: settings,
the clock, ids, the secret box, the Prometheus metrics, sending one mail."""
