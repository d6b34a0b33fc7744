"""What an agent gives: its parts, artifacts and skills, checked where they
are given (in the agent's own call, or at registration) so that a bad one
fails there with a sentence naming it, never as an answer that breaks the
A2A schema."""

from marshmallow import EXCLUDE, Schema, ValidationError, fields
from typing import Any

from ..messages import PartField
from ..validation import NON_EMPTY, Text, flatten_errors


class AgentPartsSchema(Schema):
    """Parts an agent function gives (Reply(parts=...), artifacts): they are
    sent as they are, so they must be valid A2A parts."""

    parts = fields.List(PartField(), required=True, validate=NON_EMPTY)


class AgentArtifactSchema(AgentPartsSchema):
    """An artifact an agent gives (``Reply(artifacts=...)``)."""

    class Meta:
        unknown = EXCLUDE

    artifactId = Text(validate=NON_EMPTY)
    name = Text()
    description = Text()
    metadata = fields.Dict()
    extensions = fields.List(Text())


class SkillSchema(Schema):
    """An AgentSkill as given at registration; checked once, at start-up."""

    class Meta:
        unknown = EXCLUDE

    id = Text(required=True, validate=NON_EMPTY)
    name = Text(required=True, validate=NON_EMPTY)
    description = Text(required=True)
    tags = fields.List(Text(), load_default=list)
    examples = fields.List(Text())
    inputModes = fields.List(Text())
    outputModes = fields.List(Text())


SKILLS = SkillSchema(many=True)
AGENT_PARTS = AgentPartsSchema()
AGENT_ARTIFACT = AgentArtifactSchema()


def load_agent_output(schema: Schema, value: Any, what: str) -> Any:
    """``value`` checked by ``schema``, or ValueError naming the bad field."""
    try:
        return schema.load(value)
    except ValidationError as exc:
        field, text = flatten_errors(exc.messages)[0]
        raise ValueError("%s: %s: %s" % (what, field, text)) from None
