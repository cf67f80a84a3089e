"""The doors a person uses themselves: signing in and out, and answering an invitation."""
