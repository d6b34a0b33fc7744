"""Task states as the storage keeps them (A2A 0.3 spelling, the stored form)."""

TERMINAL_STATES = frozenset(("completed", "canceled", "failed", "rejected"))
WAITING_STATES = frozenset(("input-required", "auth-required"))
#: The text of the status message a stale turn is failed with.
STALE_TURN_TEXT = ("The agent stopped before finishing this turn: its worker "
                   "process ended. Send a new message with this contextId to "
                   "try again.")
