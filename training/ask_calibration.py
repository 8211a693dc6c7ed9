"""Calibrate the embedded asker's confidence on ELITR-Bench dev questions (`python -m training ask-calibration`).

Every question is answered with the raw score (no threshold), each answer graded 1-10 by the offline answer judge
(`benchmark.answer_judge`, fitted to GPT-4's grades of published answers) against the ground truth; an answer
counts as right at `RIGHT_FROM` or more. The curve is isotonic (raw score up, probability never down). Its
reliability table is held out by meeting (each meeting's answers placed by the curve fitted without it); the
threshold is `MIN_RIGHT`: an answer right less than one time in ten is not given ("Nothing in the meeting so far
says"). The figures say what that costs in mean grade, held out: the judge grades an honest "nothing" low too,
so the grade alone would never abstain.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.answer_judge import AnswerJudge
from benchmark.qa import _meeting_states, load_questions
from delegate.ask.base import NO_ANSWER
from delegate.ask.calibration import AskCalibration
from delegate.ask.embedded import EmbeddedAsker
from delegate.language.questions import QuestionType

MIN_RIGHT = 0.1
"""Below this chance of being right (calibrated) the asker says nothing in the meeting answers the question."""
RIGHT_FROM = 6.0
"""An answer graded this or more (1-10) is right."""
_PERSON = re.compile(r"\[?\b([A-Z]+\d+)\b\]?")


def _fit(raw: np.ndarray, right: np.ndarray, threshold: float = 0.0) -> AskCalibration:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(increasing=True, out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(raw, right)
    xs = np.asarray(iso.X_thresholds_, dtype=float)
    ys = np.asarray(iso.y_thresholds_, dtype=float)
    return AskCalibration(tuple(round(float(x), 4) for x in xs), tuple(round(float(y), 4) for y in ys), threshold)


def who_first(text: str, reference: str) -> bool:
    """Whether the first person (or organisation: ELITR masks both, "[PERSON7]", "[ORGANIZATION5]") the answer
    names is one the ground truth names."""
    named = _PERSON.findall(text)
    return bool(named) and named[0] in set(_PERSON.findall(reference))


def run(data: Path, questions_file: Path, out: Path) -> dict[str, Any]:
    questions = load_questions(questions_file)
    raw_asker = EmbeddedAsker(AskCalibration.identity())
    states = _meeting_states(data, {q.meeting_id for q in questions}, raw_asker)
    questions = [q for q in questions if q.meeting_id in states]
    judge = AnswerJudge.shipped()
    rows, none_grades = [], {}
    for q in questions:
        a = raw_asker.answer(states[q.meeting_id], q.question)
        rows.append((q, a, judge.grade(q.question, a.text, q.reference)))
        none_grades[q.id, q.meeting_id] = judge.grade(q.question, NO_ANSWER, q.reference)
    answered = [(q, a, g) for q, a, g in rows if a.answered]
    instead = np.array([none_grades[q.id, q.meeting_id] for q, _, _ in answered])
    raw = np.array([a.confidence for _, a, _ in answered])
    right = np.array([float(g >= RIGHT_FROM) for _, _, g in answered])
    meeting = np.array([q.meeting_id for q, _, _ in answered])
    held = np.zeros(len(answered))
    for mid in sorted(set(meeting)):
        inside = meeting == mid
        held[inside] = [_fit(raw[~inside], right[~inside]).confidence(float(x)) for x in raw[inside]]
    grades = np.array([g for _, _, g in answered])
    threshold = MIN_RIGHT
    shipped = _fit(raw, right, threshold)
    out.write_text(__import__("json").dumps(shipped.to_json(), indent=1) + "\n", encoding="utf-8")
    below = held < threshold
    who = [(q, a) for q, a, _ in rows if q.question_type is QuestionType.who]
    sure_who = [(q, a) for q, a in who if not a.answered or _fit(raw, right).confidence(a.confidence) >= threshold]
    return {
        "questions": len(rows),
        "answered_raw": len(answered),
        "right_raw": int(right.sum()),
        "threshold": threshold,
        "held_out_below_threshold": int(below.sum()),
        "held_out_below_right": int(right[below].sum()),
        "held_out_above_right_share": round(float(right[~below].mean()), 3) if (~below).any() else None,
        "mean_grade_below": round(float(grades[below].mean()), 2) if below.any() else None,
        "mean_grade_above": round(float(grades[~below].mean()), 2) if (~below).any() else None,
        "mean_grade_below_if_unanswered": round(float(instead[below].mean()), 2) if below.any() else None,
        "mean_grade_all_before": round(float(grades.mean()), 3),
        "mean_grade_all_after_held_out": round(float(np.where(below, instead, grades).mean()), 3),
        "reliability_held_out": _reliability(held, right),
        "who_questions": len(who),
        "who_first_right_raw": sum(who_first(a.text, q.reference) for q, a in who),
        "who_first_right_after": sum(who_first(a.text, q.reference) for q, a in sure_who if a.answered),
    }


def _reliability(held: np.ndarray, right: np.ndarray, bins: int = 5) -> list[dict[str, float]]:
    edges = np.linspace(0.0, 1.0, bins + 1)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (held >= lo) & ((held < hi) if hi < 1.0 else (held <= hi))
        if inside.any():
            out.append({"from": round(float(lo), 2), "to": round(float(hi), 2), "answers": int(inside.sum()),
                        "predicted": round(float(held[inside].mean()), 3), "right": round(float(right[inside].mean()), 3)})
    return out
