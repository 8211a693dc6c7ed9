"""LLM refinement of action items: the embedded extractor proposes at once, an LLM revises it just after.

`LLMActionRefiner` is an `Extractor` (and a `Refiner`) around the embedded `ActionExtractor`:

- `observe` is the embedded extractor's, unchanged: it runs on every utterance in microseconds, and its
  proposals and updates go out at once, as without an LLM.
- `refine` is awaited by the session in a task of its own, for what `observe` just proposed or updated.
  It asks the LLM (`prompts/extract_actions.md.j2`, the transcript up to that utterance, the actions as
  candidates) within `llm_timeout_s`, validates the answer, and records what changed in the same
  `ActionBook`, where it becomes one more event of the action:
  - a kept candidate is *updated* (status stays `proposed`): cleaner description, type, assignees, due,
    excerpt; nothing is emitted when the LLM changed nothing;
  - a candidate the LLM leaves out is not an action item: it ends `rejected`, like a principal's "no",
    and stays in the book and the audit log, so the principal can still approve it;
  - on a timeout, an HTTP or connection error, or an answer that fails validation, the actions stay as
    the embedded extractor made them and a fallback is counted.

The session sends each change as an `action` frame and records it in the audit log (event `updated` or
`rejected`, `source: "refiner"`). Nothing waits for the LLM but the refinement itself, and an action is
never lost: the embedded version stands whenever the LLM fails. A refinement applies only to the version
it was asked about: if the principal gave a verdict meanwhile, or a newer utterance changed the action
(which starts a refinement of its own), it is dropped. A restatement merges into the refined version; one
of a rejected action is proposed afresh, and refined again.

The LLM's words are checked before they count: assignees must be speaker labels of the meeting (display
names and `[LABEL]` masks are mapped back; unknown names are dropped, and none left keeps the embedded
assignees); a description, excerpt or offer that the privacy guard (`delegate.guard`) blocks keeps the
embedded version; the supporting excerpt must be a verbatim substring of the utterance it cites, else the
embedded excerpt stays; a `null` due keeps the embedded one. The prompt never sees the principal's
profile: only their speaker label.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Annotated, Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from structlog.typing import FilteringBoundLogger

from delegate.actions import ActionExtractor
from delegate.config import Settings
from delegate.guard import guard_action
from delegate.llm.client import LLMClient, LLMFailure, chat_json
from delegate.llm.prompts import Line, approx_tokens, render
from delegate.meeting import MeetingState
from delegate.models import ActionType, Profile, ProposedAction, Utterance

log = structlog.get_logger(__name__)

REFINE_PROMPT = "extract_actions.md.j2"
MAX_LINES = 40
"""Transcript lines shown at most: an action item's context is the last minutes, not the whole meeting."""
MIN_EXCERPT_WORDS = 2
"""A shorter "excerpt" (a lone word found anywhere) would ground nothing."""

_MASK = re.compile(r"^\[(.+)\]$")

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=400)]


class RefinedAction(BaseModel):
    """One item of the refinement prompt's answer."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    action_type: ActionType
    description: Text
    assignees: list[str] = Field(default_factory=list, max_length=50)
    due: Annotated[str, StringConstraints(strip_whitespace=True, max_length=120)] | None = None
    utterance_id: int | None = None
    supporting_excerpt: str | None = Field(default=None, max_length=2000)


class RefineReply(BaseModel):
    """The JSON object the refinement prompt asks for: `{"actions": [...]}`."""

    model_config = ConfigDict(extra="ignore")

    actions: list[RefinedAction] = Field(max_length=50)

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        # Servers that ignore `response_format` may answer the list alone.
        return {"actions": data} if isinstance(data, list) else data


def _newest(found: list[ProposedAction]) -> int:
    return max(i for action in found for i in action.utterance_ids)


def _material(action: ProposedAction) -> dict[str, Any]:
    """What makes a version of an action: all but the utterance ids a bare restatement adds."""
    return action.model_dump(exclude={"utterance_ids"})


class LLMActionRefiner:
    """The embedded extractor, with every proposal and update refined by an LLM shortly after it went out.

    Counters for reports: `calls` (refinements that asked the LLM), `requests` (HTTP requests, retries
    included), `fallbacks` and `fallback_reasons` by kind, `refined` and `rejected` actions, and
    `excerpts_kept` (LLM excerpts that were not verbatim, replaced by the embedded one).
    """

    def __init__(
        self,
        embedded: ActionExtractor,
        client: LLMClient,
        settings: Settings,
        principal: Profile | None = None,
    ) -> None:
        """`principal`: whose private items the LLM's words must not give away (the live service passes
        it; the action benchmark has no profiles)."""
        self.embedded = embedded
        self.principal = principal
        self.client = client
        self.settings = settings
        self.calls = 0
        self.fallbacks = 0
        self.fallback_reasons: Counter[str] = Counter()
        self.refined = 0
        self.rejected = 0
        self.excerpts_kept = 0
        self._requests: Counter[str] = Counter()

    @property
    def requests(self) -> int:
        return self._requests["requests"]

    @property
    def actions(self) -> list[ProposedAction]:
        return self.embedded.actions

    def observe(self, meeting: MeetingState) -> list[ProposedAction]:
        return self.embedded.observe(meeting)

    def apply_feedback(self, action_id: str, approve: bool) -> ProposedAction:
        return self.embedded.apply_feedback(action_id, approve)

    def prompt(self, meeting: MeetingState, found: list[ProposedAction]) -> tuple[str, dict[int, Utterance]]:
        """The refinement prompt within `llm_context_tokens`, and the utterances it shows, by id.

        The transcript ends at the newest utterance of `found`, whenever the prompt is made."""
        upto = _newest(found)
        attendees = [
            f"{label} ({meeting.names[label]})" if meeting.names.get(label, label) != label else label
            for label in meeting.attendees
        ]
        context: dict[str, Any] = {
            "attendees": attendees,
            "principal": self.embedded.principal,
            "candidates": [action.model_dump() for action in found],
        }
        budget = self.settings.llm_context_tokens - approx_tokens(
            render(REFINE_PROMPT, transcript=[], **context)
        )
        shown: list[Utterance] = []
        for u in reversed(meeting.utterances):
            if u.id > upto:
                continue
            cost = approx_tokens(f"{u.id} {u.speaker}: {u.text}\n")
            # The newest line is shown whole even past the budget: the LLM's excerpt must be found in it.
            if (cost > budget and shown) or len(shown) >= MAX_LINES:
                break
            shown.append(u)
            budget -= cost
        shown.reverse()
        lines = [Line(id=u.id, speaker=u.speaker, text=u.text) for u in shown]
        return render(REFINE_PROMPT, transcript=lines, **context), {u.id: u for u in shown}

    async def refine(self, meeting: MeetingState, found: list[ProposedAction]) -> list[ProposedAction]:
        if not found:
            return []
        started = time.perf_counter()
        prompt, shown = self.prompt(meeting, found)
        upto = _newest(found)
        bound = log.bind(meeting_id=meeting.meeting_id, utterance_id=upto)
        self.calls += 1
        try:
            reply = await chat_json(
                self.client,
                self.settings.llm_model,
                prompt,
                RefineReply,
                budget_s=self.settings.llm_timeout_s,
                attempts=self.settings.llm_retries + 1,
                max_tokens=self.settings.llm_max_tokens,
                on_request=self._requests,
                logger=bound,
            )
        except LLMFailure as failure:
            self.fallbacks += 1
            self.fallback_reasons[failure.kind] += 1
            bound.warning(
                "action_refine_fallback",
                kind=failure.kind,
                detail=failure.detail,
                action_ids=[a.id for a in found],
                latency_ms=round((time.perf_counter() - started) * 1000, 1),
            )
            return []
        verdicts: dict[str, RefinedAction] = {}
        for item in reply.actions:
            if item.id is not None and item.id not in verdicts:
                verdicts[item.id] = item
        labels = self._labels(meeting, shown)
        changed: list[ProposedAction] = []
        for asked in found:
            current = self.embedded.book.get(asked.id)
            if current.status != "proposed" or _material(current) != _material(asked):
                bound.info("action_refine_stale", action_id=asked.id, status=current.status)
                continue
            item = verdicts.get(asked.id)
            if item is None:
                self.rejected += 1
                bound.info("action_refine_rejected", action_id=asked.id)
                changed.append(self.embedded.apply_feedback(asked.id, approve=False))
                continue
            revised = self._revised(current, item, meeting, labels, shown, bound)
            if revised == current:
                continue
            blocked = (
                guard_action(revised, self.principal, [u.text for u in shown.values()])
                if self.principal is not None
                else None
            )
            if blocked is not None:
                # The embedded version stands, as on any other failure of the LLM.
                self.fallbacks += 1
                self.fallback_reasons["private_leak"] += 1
                bound.warning("action_refine_fallback", kind="private_leak", action_id=asked.id,
                              blocked=blocked.model_dump())
                continue
            self.refined += 1
            changed.append(self.embedded.revise(revised, upto))
        bound.info(
            "action_refine",
            asked=len(found),
            changed=len(changed),
            ignored=len(set(verdicts) - {a.id for a in found}),
            latency_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return changed

    @staticmethod
    def _labels(meeting: MeetingState, shown: dict[int, Utterance]) -> set[str]:
        """Who an action can fall to: the attendees, and people the transcript shown names by their mask."""
        labels = set(meeting.attendees)
        for u in shown.values():
            labels.update(m.group(1) for m in re.finditer(r"\[(PERSON\d+)\]", u.text))
        return labels

    def _revised(
        self,
        current: ProposedAction,
        item: RefinedAction,
        meeting: MeetingState,
        labels: set[str],
        shown: dict[int, Utterance],
        bound: FilteringBoundLogger,
    ) -> ProposedAction:
        update: dict[str, Any] = {
            "action_type": item.action_type,
            "description": " ".join(item.description.split()),
        }
        by_name = {name.lower(): label for label, name in meeting.names.items()}
        assignees: list[str] = []
        for who in item.assignees:
            who = who.strip()
            m = _MASK.match(who)
            who = m.group(1) if m else who
            label = who if who in labels or who in current.assignees else by_name.get(who.lower())
            if label is not None and label not in assignees:
                assignees.append(label)
        if assignees:
            update["assignees"] = assignees
        elif item.assignees:
            bound.info("action_refine_assignees_unknown", action_id=current.id, assignees=item.assignees[:5])
        if item.due:
            update["due"] = item.due
        excerpt = (item.supporting_excerpt or "").strip()
        cited = shown.get(item.utterance_id) if item.utterance_id is not None else None
        if cited is not None and len(excerpt.split()) >= MIN_EXCERPT_WORDS and excerpt in cited.text:
            update["supporting_excerpt"] = excerpt
            update["utterance_ids"] = sorted({*current.utterance_ids, cited.id})
        elif excerpt != current.supporting_excerpt:
            self.excerpts_kept += 1
            bound.info("action_refine_excerpt_kept", action_id=current.id, cited=item.utterance_id)
        return current.model_copy(update=update)
