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


@dataclass(frozen=True)
class PassportLimits:
    """Decode-time caps on the passport reply, for a model that cannot close long JSON on its own (the 135M
    embedded model). They live in the JSON schema only: a grammar-constrained model then always reaches the
    action within its reply budget, while longer text from another model is still accepted. A model without
    such a need gets no caps (`limits=None`), as the verbal protocol asks for none."""

    items: int = 6
    """Entries in each passport list (entities, relations, each kind of gap)."""
    name_chars: int = 32
    """Characters of an entity, relation or finding name."""
    state_chars: int = 80
    """Characters of a state, gap, reason or finding detail."""
    ref_chars: int = 24
    """Characters of a source reference."""
    findings: int = 3
    """Items in the check and citation lists (the auditor may list twice as many)."""

    def __post_init__(self) -> None:
        values = (self.items, self.name_chars, self.state_chars, self.ref_chars, self.findings)
        if min(values) < 1:
            raise ValueError(f"passport limits must all be ≥ 1, got {self}")


class Entity(BaseModel):
    """One passport entry. `confidence` and `source` are None when the short passport switches them off."""

    model_config = ConfigDict(extra="forbid")
    name: str
    state: str
    confidence: Confidence | None = None
    source: str | None = None
    """The step or observation the state comes from."""


class Relation(BaseModel):
    """entity→entity, state→state or entity→state, named by the entries' names or states."""

    model_config = ConfigDict(extra="forbid")
    source: str
    target: str
    relation: str


class Passport(BaseModel):
    """The committed passport: the method's only memory between steps (with history=none)."""

    model_config = ConfigDict(extra="forbid")
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    knowledge_gaps: list[str] = Field(default_factory=list)
    achievement_gaps: list[str] = Field(default_factory=list)


class ActiveGap(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["knowledge", "achievement"]
    gap: str
    reason: str
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
    entry: str
    problem: Literal["incompatible", "contradicted", "unsourced"]
    detail: str = ""


class AuditReport(BaseModel):
    """The independent controller's reply: problems only, no fixes."""

    model_config = ConfigDict(extra="forbid")
    problems: list[Finding] = Field(default_factory=list)


def _text(chars: int | None) -> Any:
    """A string type whose schema carries `maxLength` when a cap is set."""
    return Annotated[str, Field(json_schema_extra={"maxLength": chars})] if chars else str


def _items(n: int | None, *, required: bool = False) -> Any:
    """A list field whose schema carries `maxItems` when a cap is set."""
    extra = {"json_schema_extra": {"maxItems": n}} if n else {}
    return Field(..., min_length=1, **extra) if required else Field(default_factory=list, **extra)


def _capped(record: type[BaseModel], **fields: Any) -> type[BaseModel]:
    """`record` again under its own name, with `fields` replaced (the capped schema variant)."""
    keep = {name: (info.annotation, info) for name, info in record.model_fields.items() if name not in fields}
    return create_model(record.__name__, __config__=ConfigDict(extra="forbid"), **keep, **fields)


@dataclass(frozen=True)
class ReplyShape:
    """The protocol levers that change the reply schema (and with it the prompt), and the model's caps."""

    confidence: bool = True
    source: bool = True
    active_gaps: int = 1
    limits: PassportLimits | None = None
    """Decode-time caps for a small model; None sends the protocol without caps."""

    def __post_init__(self) -> None:
        if self.active_gaps not in (1, 2):
            raise ValueError(
                f"active_gaps must be 1 or 2 (the protocol allows at most two), got {self.active_gaps}"
            )

    def finding_model(self) -> type[BaseModel]:
        name, line = (
            _text(self.limits and self.limits.name_chars),
            _text(self.limits and self.limits.state_chars),
        )
        return _capped(Finding, entry=(name, ...), detail=(line, ""))

    def audit_model(self) -> type[BaseModel]:
        """The auditor's reply schema; it may list twice as many problems as the policy's own check."""
        findings = self.limits and self.limits.findings
        return _capped(AuditReport, problems=(list[self.finding_model()], _items(findings and 2 * findings)))

    def passport_model(self) -> type[BaseModel]:
        name, line = (
            _text(self.limits and self.limits.name_chars),
            _text(self.limits and self.limits.state_chars),
        )
        entry: dict[str, Any] = {"name": (name, ...), "state": (line, ...)}
        if self.confidence:
            entry["confidence"] = (Confidence, ...)
        if self.source:
            entry["source"] = (_text(self.limits and self.limits.ref_chars), ...)
        entity = create_model("PassportEntity", __config__=ConfigDict(extra="forbid"), **entry)
        relation = _capped(Relation, source=(name, ...), target=(name, ...), relation=(name, ...))
        n = self.limits and self.limits.items
        return create_model(
            "PassportDraft",
            __config__=ConfigDict(extra="forbid"),
            entities=(list[entity], _items(n)),
            relations=(list[relation], _items(n)),
            knowledge_gaps=(list[line], _items(n)),
            achievement_gaps=(list[line], _items(n)),
        )

    def extra_fields(self) -> dict[str, tuple[Any, Any]]:
        """The reply keys besides thought and action, in the order the model writes them: check, then the
        fixed passport, then health, then the active gap(s) the action serves."""
        line = _text(self.limits and self.limits.state_chars)
        active = _capped(ActiveGap, gap=(line, ...), reason=(line, ...))
        few = self.limits and self.limits.findings
        return {
            "check": (list[self.finding_model()], _items(few)),
            "passport": (self.passport_model(), ...),
            "health": (Health, ...),
            "active_gaps": (
                list[active],
                Field(..., min_length=1, json_schema_extra={"maxItems": self.active_gaps}),
            ),
            "citations": (list[_text(self.limits and self.limits.name_chars)], _items(few)),
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
    if "check" in values:
        values["check"] = [Finding.model_validate(f.model_dump()) for f in values["check"]]
    if "active_gaps" in values:
        values["active_gaps"] = [ActiveGap.model_validate(g.model_dump()) for g in values["active_gaps"]]
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
