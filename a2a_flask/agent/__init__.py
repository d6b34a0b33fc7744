"""Agents: what an author writes against (``api``: ``Turn``, ``Reply``,
``InputRequired``, ``AuthRequired``, ``Reject``), what is checked of what it
gives (``output``), the registered agent (``registry``: ``Agent``) and the
engine that runs a turn and stores its outcome (``engine``)."""

from .api import AuthRequired, InputRequired, Reject, Reply, Turn
from .engine import FAILED_TEXT, TurnReadFailed, run_turn
from .registry import Agent

__all__ = ["Agent", "AuthRequired", "FAILED_TEXT", "InputRequired", "Reject",
           "Reply", "Turn", "TurnReadFailed", "run_turn"]
