"""A meeting rebuilt from its audit log: the parts a session is made of, as they stood at the last record.

Used when a process takes over a meeting it does not hold (after a restart, or when another process died):
the log is the meeting. The action extractor, when given, is fed the utterances again in log order, with
the principal's feedback and the LLM's revisions where the log has them, so that it proposes the same ids
and merges restatements as it did live; where it differs from the log anyway, the log wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from delegate.actions import ActionExtractor, Extractor
from delegate.meeting import MeetingState
from delegate.models import Decision, ProposedAction, Utterance
from delegate.server.approval import HeldSpeech
from delegate.server.protocol import AdmissionState, MeetingSpec
from delegate.store.base import ENDED, AuditEvent, AuditKind

_ACTION_FIELDS = frozenset(ProposedAction.model_fields)
_DECISION_FIELDS = frozenset(Decision.model_fields) - {"utterance_id"}
_UTTERANCE_FIELDS = frozenset(Utterance.model_fields) - {"id"}


@dataclass
class Rebuilt:
    state: MeetingState
    decisions: list[Decision] = field(default_factory=list)
    actions: dict[str, ProposedAction] = field(default_factory=dict)
    engine: str | None = None
    owner: str | None = None
    created_at: float | None = None
    ended: bool = False
    ended_reason: str | None = None
    undecided: int | None = None
    """The latest utterance, when neither its decision nor its drop was recorded: decide it again."""
    speech: dict[int, HeldSpeech] = field(default_factory=dict)
    """Speech held for the principal's approval, by utterance id, as it stood at the last record."""
    admission: AdmissionState | None = None
    """Where the bot stood at the last record (None: as the meeting started)."""
    disclosed: bool = False

    @property
    def pending_speech(self) -> HeldSpeech | None:
        """A held speech nobody resolved before the log stopped (its timer died with the process)."""
        return next((h for h in self.speech.values() if h.pending), None)


def rebuild(
    meeting_id: str, spec: MeetingSpec, events: list[AuditEvent], extractor: Extractor | None = None
) -> Rebuilt:
    """The session's parts from its events, oldest first; `extractor` (fresh) is brought to the same point."""
    state = MeetingState(meeting_id=meeting_id, attendees=spec.all_attendees(), names=dict(spec.names))
    out = Rebuilt(state=state)
    settled: set[int] = set()
    speaker = spec.principal.speaker_label
    for event in events:
        p = event.payload
        match event.kind:
            case AuditKind.meeting_created:
                state.date = datetime.fromtimestamp(event.ts, UTC).date()  # due dates count from the meeting's day
                out.engine = p.get("engine")
                out.owner = p.get("owner")
                out.created_at = event.ts
                out.admission = p.get("admission")
            case AuditKind.admission:
                out.admission = p.get("state")
            case AuditKind.disclosure:
                out.disclosed = True
            case AuditKind.utterance if event.utterance_id is not None:
                state.add(Utterance(id=event.utterance_id, **{k: v for k, v in p.items() if k in _UTTERANCE_FIELDS}))
                if extractor is not None:
                    extractor.observe(state)
            case AuditKind.decision if event.utterance_id is not None:
                decision = Decision(
                    utterance_id=event.utterance_id, **{k: v for k, v in p.items() if k in _DECISION_FIELDS}
                )
                out.decisions.append(decision)
                settled.add(event.utterance_id)
                if p.get("approval") == "pending":
                    out.speech[event.utterance_id] = HeldSpeech(
                        utterance_id=event.utterance_id,
                        proposed=decision.speak,
                        expires_at=float(p.get("expires_at") or event.ts),
                    )
                elif decision.spoke:
                    state.note_spoken(speaker, decision.used_background)
            case AuditKind.speech_resolved if event.utterance_id in out.speech:
                held = HeldSpeech.model_validate(
                    out.speech[event.utterance_id].model_dump()
                    | {"status": p.get("status"), "text": p.get("text") or "", "reason": p.get("reason")}
                )
                out.speech[held.utterance_id] = held
                if held.status in ("approved", "edited"):
                    spoken = next(d for d in reversed(out.decisions) if d.utterance_id == held.utterance_id)
                    state.note_spoken(speaker, spoken.used_background)
            case AuditKind.decision_dropped if event.utterance_id is not None:
                settled.add(event.utterance_id)
            case AuditKind.action:
                action = ProposedAction.model_validate({k: v for k, v in p.items() if k in _ACTION_FIELDS})
                out.actions[action.id] = action
                embedded = _embedded(extractor)
                if p.get("source") == "refiner" and embedded is not None:
                    embedded.revise(action, event.utterance_id)
            case AuditKind.feedback if p.get("action_id") in out.actions:
                action_id = p["action_id"]
                status = p.get("status") or ("approved" if p.get("verdict") == "approve" else "rejected")
                out.actions[action_id] = out.actions[action_id].model_copy(update={"status": status})
                if extractor is not None and action_id in {a.id for a in extractor.actions}:
                    extractor.apply_feedback(action_id, status == "approved")
            case kind if kind in ENDED:
                out.ended = True
                out.ended_reason = p.get("reason") or str(kind)
    last = state.last_id
    if last is not None and last not in settled:
        out.undecided = last
    if extractor is not None:
        _align(extractor, out.actions)
    return out


def _embedded(extractor: Extractor | None) -> ActionExtractor | None:
    inner = getattr(extractor, "embedded", extractor)
    return inner if isinstance(inner, ActionExtractor) else None


def _align(extractor: Extractor, logged: dict[str, ProposedAction]) -> None:
    """Where replaying the extractor did not land where the log says (another version of the code, an LLM
    revision applied mid-utterance), take the log's version, which is what the client was told."""
    embedded = _embedded(extractor)
    if embedded is None:
        return
    have = {a.id: a for a in embedded.actions}
    for action in logged.values():
        current = have.get(action.id)
        if current is not None and current == action:
            continue
        if current is None or current.model_copy(update={"status": action.status}) != action:
            current = embedded.revise(action.model_copy(update={"status": "proposed"}), None)
        if current.status != action.status:
            embedded.apply_feedback(action.id, action.status == "approved")
