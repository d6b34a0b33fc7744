"""``python -m a2a_flask.client URL TEXT [--key K] [--wait] [--json]``: call
an A2A agent from a terminal, no Flask app needed (``terminal.main``)."""

from .terminal import main

raise SystemExit(main())
