"""Task states as the storage keeps them (A2A 0.3 spelling, the stored form)."""

TERMINAL_STATES = frozenset(("completed", "canceled", "failed", "rejected"))
WAITING_STATES = frozenset(("input-required", "auth-required"))
#: The states a task can be canceled in: every stored state but the terminal.
OPEN_STATES = WAITING_STATES | {"working"}
#: The terminal states as an SQL list (``state IN ...``), both dialects.
TERMINAL_SQL = "(%s)" % ", ".join("'%s'" % state for state in sorted(TERMINAL_STATES))
#: The text of the status message a stale turn is failed with.
STALE_TURN_TEXT = ("The agent stopped before finishing this turn: its worker "
                   "process ended. Send a new message with this contextId to "
                   "try again.")
#: The failed status of a turn whose artifacts would bring its task's over
#: what a task may hold (Settings.max_task_artifact_bytes): total, limit.
ARTIFACTS_FULL_TEXT = ("The agent's answer was not kept: its artifacts would "
                       "bring this task's artifacts to %d bytes, more than the "
                       "%d bytes a task may hold so that it fits an answer "
                       "(A2A_MAX_ANSWER_BYTES less A2A_MAX_TURN_OUTPUT_BYTES "
                       "and an eighth). Nothing of it was stored; continue in "
                       "a new task.")
#: The status message of a background turn waiting for a worker.
QUEUED_TEXT = "Queued: waiting for a worker to run this turn."
#: The status message of a background turn whose worker stopped holding it
#: (killed, or stopped before it finished): at-most-once, the turn is not rerun.
LEASE_EXPIRED_TEXT = ("The agent stopped before finishing this turn: the "
                      "worker running it stopped (killed or shut down), and "
                      "the turn is not run twice. Send a new message with "
                      "this contextId to try again.")
#: The status message of a background turn of an agent not registered
#: retry=True whose read met a storage outage: it is not rerun either.
READ_FAILED_TEXT = ("The agent could not complete this turn: the storage was "
                    "unavailable while it read the task, and the turn is not "
                    "run twice. Send a new message with this contextId to try "
                    "again.")
#: The same for an agent registered retry=True that ran out of attempts.
ATTEMPTS_EXHAUSTED_TEXT = ("The agent stopped before finishing this turn: the "
                           "workers running it stopped %d times. Send a new "
                           "message with this contextId to try again.")
