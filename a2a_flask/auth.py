"""Who is calling: credentials to a ``Caller``, and what a caller may reach."""

from . import errors


class Caller:
    """An authenticated (or, with auth off, anonymous) caller.

    ``id`` owns tasks: two requests with the same id see the same tasks.
    ``scope`` is None for every agent, else the set of agent names allowed.
    """

    __slots__ = ("id", "kind", "name", "scope", "authenticated")

    def __init__(self, id, kind, name, scope=None, authenticated=True):
        self.id = id
        self.kind = kind
        self.name = name
        self.scope = scope
        self.authenticated = authenticated

    def may_reach(self, agent_name):
        return self.scope is None or agent_name in self.scope


ANONYMOUS = Caller("anonymous", "anonymous", "anonymous", authenticated=False)


def authenticate(state, request):
    """The caller of ``request``, or ``Unauthenticated`` (HTTP 401)."""
    if state.settings.auth_off:
        return ANONYMOUS
    raise errors.Unauthenticated()


def authorize(caller, agent):
    if not caller.may_reach(agent.name):
        raise errors.Forbidden(
            "These credentials may not talk to agent %s." % agent.name)


def security_requirements(settings):
    """(securitySchemes, security) for the card: what the service accepts."""
    if settings.auth_off:
        return {}, []
    return {}, []
