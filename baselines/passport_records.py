"""Typed records of the situation-passport protocol (method=passport) and the reply schema its levers shape.

The passport is the verbal protocol's counterpart of the PoS belief (SPEC-POS §2): entities with a plain-words
state instead of a World graph, knowledge gaps (Δ^E) and achievement gaps (Δ^A) as plain strings, and an
active gap chosen by the model itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

Confidence = Literal["high", "medium", "low"]
Movement = Literal["none", "frozen", "circle", "drift"]
StuckOn = Literal["none", "knowledge", "action"]

# Length caps live in the JSON schema only: they let a grammar-constrained small model always close its reply
# (and so reach the action) within the reply budget, while longer text from an unconstrained provider is still
# accepted rather than thrown away.
Name = Annotated[str, Field(json_schema_extra={"maxLength": 32})]
Line = Annotated[str, Field(json_schema_extra={"maxLength": 80})]
Ref = Annotated[str, Field(json_schema_extra={"maxLength": 24})]
FEW = 3
"""Items allowed in the check and citation lists."""


class Entity(BaseModel):
    """One passport entry. `confidence` and `source` are None when the short passport switches them off."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    state: Line
    confidence: Confidence | None = None
    source: Ref | None = None
    """The step or observation the state comes from."""


class Relation(BaseModel):
    """entity→entity, state→state or entity→state, named by the entries' names or states."""

    model_config = ConfigDict(extra="forbid")
    source: Name
    target: Name
    relation: Name


class Passport(BaseModel):
    """The committed passport: the method's only memory between steps (with history=none)."""

    model_config = ConfigDict(extra="forbid")
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    knowledge_gaps: list[Line] = Field(default_factory=list)
    achievement_gaps: list[Line] = Field(default_factory=list)


class ActiveGap(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["knowledge", "achievement"]
    gap: Line
    reason: Line
    """One line: why this gap is the most valuable now."""


class Health(BaseModel):
    """The model's own stall judgement; the counterpart of PoS's numeric H and Static/Cycle/Drift (SPEC-POS §10–§11)."""

    model_config = ConfigDict(extra="forbid")
    progress: bool
    """The active gap closed, or confidence in something important changed."""
    stall: bool
    """No progress within the last `window` steps."""
    movement: Movement
    """frozen ≈ Static, circle ≈ Cycle, drift ≈ Drift."""
    stuck_on: StuckOn
    """knowledge ≈ epistemic, action ≈ achievement (SPEC-POS §11.1)."""


class Finding(BaseModel):
    """A controller problem. `incompatible`: one entity in two states that cannot both hold; `contradicted`: the
    latest observation or other evidence disproves the entry; `unsourced`: a conclusion without a source."""

    model_config = ConfigDict(extra="forbid")
    entry: Name
    problem: Literal["incompatible", "contradicted", "unsourced"]
    detail: Line = ""


class AuditReport(BaseModel):
    """The independent controller's reply: problems only, no fixes."""

    model_config = ConfigDict(extra="forbid")
    problems: list[Finding] = Field(json_schema_extra={"maxItems": 2 * FEW})


def _max_items(n: int) -> Any:
    return Field(default_factory=list, json_schema_extra={"maxItems": n})


@dataclass(frozen=True)
class ReplyShape:
    """The protocol levers that change the reply schema (and with it the prompt)."""

    confidence: bool = True
    source: bool = True
    active_gaps: int = 1
    max_entries: int = 6
    """Schema cap on each passport list (entities, relations, each kind of gap)."""

    def __post_init__(self) -> None:
        if self.active_gaps not in (1, 2):
            raise ValueError(
                f"active_gaps must be 1 or 2 (the protocol allows at most two), got {self.active_gaps}"
            )
        if self.max_entries < 1:
            raise ValueError(f"max_entries must be ≥ 1, got {self.max_entries}")

    def passport_model(self) -> type[BaseModel]:
        entry: dict[str, Any] = {"name": (Name, ...), "state": (Line, ...)}
        if self.confidence:
            entry["confidence"] = (Confidence, ...)
        if self.source:
            entry["source"] = (Ref, ...)
        entity = create_model("PassportEntity", __config__=ConfigDict(extra="forbid"), **entry)
        n = self.max_entries
        return create_model(
            "PassportDraft",
            __config__=ConfigDict(extra="forbid"),
            entities=(list[entity], _max_items(n)),
            relations=(list[Relation], _max_items(n)),
            knowledge_gaps=(list[Line], _max_items(n)),
            achievement_gaps=(list[Line], _max_items(n)),
        )

    def extra_fields(self) -> dict[str, tuple[Any, Any]]:
        """The reply keys besides thought and action, in the order the model writes them: check, then the
        fixed passport, then health, then the active gap(s) the action serves."""
        return {
            "check": (list[Finding], _max_items(FEW)),
            "passport": (self.passport_model(), ...),
            "health": (Health, ...),
            "active_gaps": (
                list[ActiveGap],
                Field(..., min_length=1, json_schema_extra={"maxItems": self.active_gaps}),
            ),
            "citations": (list[Name], _max_items(FEW)),
        }


@dataclass(frozen=True)
class PassportReply:
    """The structured part of one policy reply; a part that failed validation is None and named in `problems`."""

    check: list[Finding] | None = None
    passport: Passport | None = None
    health: Health | None = None
    active_gaps: list[ActiveGap] | None = None
    citations: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "value"
    return f"{where}: {first['msg']}"


def read_reply(extra: Mapping[str, Any], shape: ReplyShape) -> PassportReply:
    """Validate each protocol part of `Decision.extra` on its own, so one bad part does not void the others."""
    fields = shape.extra_fields()
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, (annotation, spec) in fields.items():
        if key not in extra:
            if key not in ("check", "citations"):
                problems.append(f"{key}: missing")
            continue
        part = create_model(f"Part_{key}", __config__=ConfigDict(extra="forbid"), value=(annotation, spec))
        try:
            values[key] = part.model_validate({"value": extra[key]}).value
        except ValidationError as error:
            problems.append(f"{key}.{_first_error(error)}")
    if "passport" in values:
        values["passport"] = Passport.model_validate(values["passport"].model_dump())
    return PassportReply(**values, problems=problems)


def entity_changes(old: Passport | None, new: Passport) -> list[str]:
    """Names of the entities that are new in `new` or whose entry differs from `old`."""
    before = {e.name.casefold(): e for e in old.entities} if old else {}
    return [e.name for e in new.entities if before.get(e.name.casefold()) != e]


def rule_check(
    passport: Passport, names: list[str], *, mark_unsourced: bool
) -> tuple[Passport, list[Finding]]:
    """The protocol's mechanical controller rules on the entries in `names`: two different states for one
    entity are reported; a sourceless entry is reported and (when confidence and source are on) set to low."""
    wanted = {n.casefold() for n in names}
    findings: list[Finding] = []
    states: dict[str, str] = {}
    entities: list[Entity] = []
    for entity in passport.entities:
        key = entity.name.casefold()
        if key in wanted and key in states and states[key] != entity.state:
            findings.append(
                Finding(
                    entry=entity.name,
                    problem="incompatible",
                    detail=f"two states: {states[key]!r} and {entity.state!r}",
                )
            )
        states.setdefault(key, entity.state)
        if (
            mark_unsourced
            and key in wanted
            and not (entity.source or "").strip()
            and entity.confidence != "low"
        ):
            findings.append(
                Finding(entry=entity.name, problem="unsourced", detail="no source; confidence set to low")
            )
            entity = entity.model_copy(update={"confidence": "low"})
        entities.append(entity)
    return passport.model_copy(update={"entities": entities}), findings
