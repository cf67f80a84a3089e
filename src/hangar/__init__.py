"""hangar: the integration surface of a flight-school operations product."""
