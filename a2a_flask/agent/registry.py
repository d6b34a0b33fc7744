"""``Agent``: a registered agent, its function and what its card says of it."""

from marshmallow import ValidationError

from ..config import scope_set
from ..tenants import parse as parse_tenants
from ..validation import flatten_errors
from .output import SKILLS


class Agent:
    """A registered agent: its function and what its card says of it."""

    def __init__(self, name, func, description=None, skills=None,
                 extended_skills=None, input_modes=("text/plain",),
                 output_modes=("text/plain",), version="1.0.0", enabled=True,
                 card=None, background=False, retry=False, required_scopes=None,
                 tenants=()):
        if not name or "/" in name:
            raise ValueError("agent name %r must be non-empty, without '/'" % name)
        if retry and not background:
            raise ValueError("agent %r: retry=True needs background=True (a turn "
                             "run inside the request is never retried)" % name)
        self.name = name
        self.func = func
        #: Turns are queued and run by ``flask a2a worker``, never in a request.
        self.background = bool(background)
        #: A turn whose worker died is queued again (else failed: at most once).
        self.retry = bool(retry)
        doc = (func.__doc__ or "").strip().splitlines()
        self.description = description or (doc[0] if doc else "Agent %s" % name)
        self.skills = self._skills(skills) or [
            {"id": name, "name": name, "description": self.description, "tags": []}]
        self.extended_skills = self._skills(extended_skills)
        self.input_modes = list(input_modes)
        self.output_modes = list(output_modes)
        self.version = version
        self.enabled = enabled
        #: OAuth scopes an access token must grant to talk to this agent
        #: (None: A2A_OIDC_REQUIRED_SCOPES); API keys and other callers are
        #: not concerned. Not ``Caller.scope``, the agents a key may reach.
        self.required_scopes = (None if required_scopes is None
                                else scope_set(required_scopes))
        #: Tenants this agent is served to besides A2A_TENANTS' (names checked
        #: here, and against the URL prefix at start).
        self.tenants = parse_tenants(tenants, "agent %r: tenants" % name)
        #: Extra AgentCard fields (provider, documentationUrl, iconUrl...).
        self.card = dict(card or {})

    def _skills(self, skills):
        if not skills:
            return []
        try:
            return SKILLS.load(list(skills))
        except ValidationError as exc:
            field, text = flatten_errors(exc.messages)[0]
            raise ValueError("agent %r: invalid skill %s: %s" % (self.name, field, text)) from exc

    @property
    def has_extended_card(self) -> bool:
        return bool(self.extended_skills)
