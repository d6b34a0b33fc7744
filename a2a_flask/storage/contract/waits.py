"""The storage contract, waiting: what lets a process wait on many tasks
without polling each (``waits.TaskWaits``), and hand back its connections
between calls. Every method has a default: a backend without them still
works, waiters then read on a timer."""

from typing import TYPE_CHECKING, Dict, Hashable, List, Optional


class WaitStorage:
    """Waiting on tasks, and connections between calls."""

    if TYPE_CHECKING:  # TaskStorage's, which every backend inherits beside this
        def task_state(self, task_id: str) -> Optional[str]: ...

    def task_states(self, task_ids: List[str]) -> Dict[str, Optional[str]]:
        """The state of each task (None: no such task), read in one query
        where the backend can: what every blocking send of a process waits on."""
        return {task_id: self.task_state(task_id) for task_id in task_ids}

    def change_marker(self) -> Optional[Hashable]:
        """A value that changes once another connection committed (at least
        a queued turn, a settled or canceled task, a released turn), cheap
        enough to read every few milliseconds (no query of the tables); None
        when the backend cannot tell (now), and waiters read states on a
        timer."""
        return None

    def release_connection(self) -> None:
        """This thread is done with the storage for now (the end of a web
        request, a blocking send about to wait, an agent's read before it
        waits on a model): a backend holding a connection per thread may
        hand it to the next user. The next call on this thread takes one
        again. Never inside a transaction."""
