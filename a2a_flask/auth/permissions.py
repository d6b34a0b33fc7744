"""What a caller may reach: an agent (its keys' agents, a token's scopes)
and a tenant. Who the caller is: ``callers``; whether an agent may be
talked to at all: ``AppState.reachable_agent``."""

from typing import TYPE_CHECKING, AbstractSet, Optional

from .. import errors

if TYPE_CHECKING:  # pragma: no cover
    from ..agent.registry import Agent
    from ..app_state import AppState
    from .callers import Caller


def authorize(caller: "Caller", agent: "Agent",
              default_scopes: AbstractSet[str] = frozenset()) -> None:
    """``ForbiddenError`` unless ``caller`` may talk to ``agent``: a key's
    agents include it; an access token grants the scopes the agent requires
    (its ``required_scopes``, else ``default_scopes``:
    A2A_OIDC_REQUIRED_SCOPES)."""
    if not caller.may_reach(agent.name):
        raise errors.ForbiddenError(
            "These credentials may not talk to agent %s." % agent.name,
            data={"agent": agent.name})
    if caller.token_scopes is not None:
        required = (default_scopes if agent.required_scopes is None
                    else agent.required_scopes)
        if not required <= caller.token_scopes:
            raise errors.InsufficientScopeError(
                "The access token lacks a scope agent %s requires: %s."
                % (agent.name, " ".join(sorted(required - caller.token_scopes))),
                required)


def authorize_tenant(app_state: "AppState", caller: "Caller", agent: "Agent",
                     tenant: str, task_id: Optional[str] = None) -> None:
    """Nothing when ``caller`` may act in ``tenant`` ('' for none) with
    ``agent``: the agent is served to that tenant and the caller's tenant is
    that one (with A2A_AUTH=off, any). Otherwise the call is answered as if
    what it names did not exist: ``TaskNotFoundError`` when it names a task
    (``task_id``), else the unknown-agent answer. A caller of a tenant no
    longer served is refused (401): its data stays, its keys act nowhere."""
    if caller.tenant and caller.tenant not in app_state.known_tenants():
        raise errors.UnauthenticatedError(
            "These credentials belong to tenant %r, which this service no "
            "longer serves." % caller.tenant)
    served = not tenant or tenant in app_state.agent_tenants(agent)
    if served and (app_state.settings.auth_off or caller.tenant == tenant):
        return
    if task_id is not None:
        raise errors.TaskNotFoundError(data={"taskId": errors.echo(task_id)})
    raise errors.agent_not_found(agent.name)
