"""Action items from the utterance stream: who committed to, was asked for, or was assigned what work.

Policy (the team's annotation guide): an action item is future work someone committed to ("I will ..."),
or was asked to do and accepted. The responsible person is the speaker for a commitment, the addressee for
an accepted request, several people when it is shared; the chair is not credited for reminders or for
requests others accepted. Things done in the meeting, unowned wishes and questions answered in the meeting
are not action items. Types: `create_task` for concrete work to track, `other` only when nothing fits.

An utterance flows through the stages, one module each:

- `vocabulary` — the phrase lists: verbs of work, triggers, what rules a clause out;
- `detect` — is there a commitment, request, assignment or acceptance here, its clause, and how sure;
- `assign` — whose work: the speaker, the people addressed (`delegate.addressing`), the people named;
- `describe` — an imperative description from the clause ("you" and "me" become the people meant);
- `classify` — the action type and the due date (`dateparser`, from the meeting's date);
- `book` — the meeting's items: requests wait for acceptance, restatements merge, every change is an event;
- `extractor` — `ActionExtractor`, which runs the stages, and the `Extractor` / `Refiner` protocols
  (`delegate.actions.refiner` is the LLM `Refiner`).
"""
from delegate.actions.book import ActionBook, UnknownAction
from delegate.actions.classify import action_type, due_date, find_due
from delegate.actions.extractor import ActionExtractor, Extractor, Refiner
from delegate.actions.models import ActionEvent, Candidate

__all__ = [
    "ActionBook", "ActionEvent", "ActionExtractor", "Candidate", "Extractor", "Refiner", "UnknownAction",
    "action_type", "due_date", "find_due",
]
