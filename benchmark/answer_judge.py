"""The offline answer judge: a 1-10 grade of an answer against ELITR-Bench's ground truth, with no network.

A ridge regression over a few declared features (content-word, name-mask and number overlap with the
reference, WordLlama cosine, refusals, lengths) fitted on GPT-4's published grades. The weights ship in
`benchmark/answer_judge_weights.json`; `python -m benchmark.answer_judge --fit FILE` refits them and
prints the leave-one-meeting-out figures (the ones to quote: the grades of a meeting never fit its weights).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import typer
from pydantic import BaseModel, ConfigDict
from scipy.stats import spearmanr

from delegate.language.similarity import embedding
from delegate.language.text import content_words
from delegate.resources import package_path

WEIGHTS_FILE = "answer_judge_weights.json"
RIDGE = 1.0

_MASK = re.compile(
    r"\[?\b(PERSON|ORGANIZATION|PROJECT|LOCATION|ANNOTATOR|URL|EMAIL|OTHER)\s?(\d+)\b\]?", re.I
)
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "hundred": "100",
}
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b|\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)
_REFUSAL = re.compile(
    r"(not (explicitly |clearly |directly )?(mentioned|stated|specified|provided|clear|discussed|given)|"
    r"no (information|mention|indication)|does(n't| not) (mention|provide|specify|say|state|include)|"
    r"cannot (be )?determine|can't determine|unclear|unable to|nothing in the meeting|not possible to)",
    re.I,
)


def _normalise(text: str) -> str:
    return _MASK.sub(lambda m: f" {m.group(1).lower()}{m.group(2)} ", text)


def _masks(text: str) -> set[str]:
    return {f"{m.group(1).lower()}{m.group(2)}" for m in _MASK.finditer(text)}


def _numbers(text: str) -> set[str]:
    out = set()
    for m in _NUMBER.finditer(_MASK.sub(" ", text)):
        token = m.group(0).lower()
        out.add(_NUMBER_WORDS.get(token, token))
    return out


FEATURES = (
    "bias",
    "recall",
    "recall_sq",
    "precision",
    "f1",
    "mask_recall",
    "mask_extra",
    "has_masks",
    "number_hit",
    "number_miss",
    "cosine",
    "refusal",
    "log_words",
    "long_answer",
    "reference_words",
    "recall_x_short",
)


def features(question: str, response: str, reference: str) -> np.ndarray:
    """The feature vector of one graded answer, in the order of `FEATURES`."""
    r, g = _normalise(response), _normalise(reference)
    q_words = content_words(_normalise(question))
    rw, gw = content_words(r), content_words(g)
    # Words the question already holds do not show that the answer knows anything.
    g_new = gw - q_words or gw
    recall = len(rw & g_new) / len(g_new) if g_new else 0.0
    precision = len(rw & gw) / len(rw) if rw else 0.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    gm, rm = _masks(reference) - _masks(question), _masks(response)
    mask_recall = len(rm & gm) / len(gm) if gm else 0.0
    mask_extra = min(len(rm - gm - _masks(question)), 6) / 6
    gn, rn = _numbers(reference) - _numbers(question), _numbers(response)
    number_hit = 1.0 if gn and gn & rn else 0.0
    number_miss = 1.0 if gn and not gn & rn else 0.0
    cosine = float(np.dot(embedding(r), embedding(g))) if r.strip() and g.strip() else 0.0
    words = len(response.split())
    log_words = math.log1p(words)
    short = 1.0 if words <= 30 else 0.0
    return np.array(
        [
            1.0,
            recall,
            recall * recall,
            precision,
            f1,
            mask_recall,
            mask_extra,
            1.0 if gm else 0.0,
            number_hit,
            number_miss,
            cosine,
            1.0 if _REFUSAL.search(response) else 0.0,
            log_words,
            1.0 if words > 120 else 0.0,
            math.log1p(len(reference.split())),
            recall * short,
        ]
    )


class JudgeWeights(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    features: list[str]
    weights: list[float]
    mean: list[float]
    scale: list[float]
    trained_on: str


def fit(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ridge regression on standardised features (the bias column untouched): weights, mean, scale."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    mean[0], scale[0] = 0.0, 1.0
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    penalty = ridge * np.eye(x.shape[1])
    penalty[0, 0] = 0.0
    w = np.linalg.solve(z.T @ z + penalty, z.T @ y)
    return w, mean, scale


def _predict(x: np.ndarray, w: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return np.clip(((x - mean) / scale) @ w, 1.0, 10.0)


@dataclass
class AnswerJudge:
    """Grades answers 1-10 against a reference with the shipped (or given) weights."""

    weights: JudgeWeights

    @classmethod
    def shipped(cls) -> AnswerJudge:
        text = resources.files("benchmark").joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
        return cls(JudgeWeights.model_validate_json(text))

    def grade(self, question: str, response: str, reference: str) -> float:
        x = features(question, response, reference)[None, :]
        w = self.weights
        return float(_predict(x, np.array(w.weights), np.array(w.mean), np.array(w.scale))[0])


class GradedAnswer(BaseModel):
    """One published answer with GPT-4's grade (and a human grade where the file has one)."""

    meeting_id: str
    question_id: str
    question_type: str
    question: str
    reference: str
    model: str
    response: str
    gpt4: float
    human: float | None = None


def load_graded(path: Path) -> list[GradedAnswer]:
    """Every scored answer of an ELITR-Bench `*_gpt-4-eval.json` file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for meeting in data["meetings"]:
        for q in meeting["questions"]:
            for r in q["generated-responses"]:
                human = next((v for k, v in r.items() if "human" in k.lower()), None)
                out.append(
                    GradedAnswer(
                        meeting_id=meeting["id"],
                        question_id=str(q["id"]),
                        question_type=q["question-type"],
                        question=q["question"],
                        reference=q["groundtruth-answer"],
                        model=r["model"],
                        response=r["generated-response"],
                        gpt4=float(r["gpt-4-eval_score"]),
                        human=float(human) if human not in (None, "") else None,
                    )
                )
    return out


def feature_matrix(answers: list[GradedAnswer]) -> np.ndarray:
    return np.stack([features(a.question, a.response, a.reference) for a in answers])


def held_out(answers: list[GradedAnswer], x: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-meeting-out grades: each meeting's answers graded by weights fitted on the others."""
    x = feature_matrix(answers) if x is None else x
    y = np.array([a.gpt4 for a in answers])
    groups = np.array([a.meeting_id for a in answers])
    out = np.zeros(len(answers))
    for g in np.unique(groups):
        test = groups == g
        w, mean, scale = fit(x[~test], y[~test])
        out[test] = _predict(x[test], w, mean, scale)
    return out


def agreement(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    rho = spearmanr(pred, truth).statistic
    return {"spearman": round(float(rho), 4), "mean_abs_diff": round(float(np.mean(np.abs(pred - truth))), 3)}


cli = typer.Typer(rich_markup_mode=None, add_completion=False)


@cli.command()
def main(
    fit_file: Path = typer.Option(..., "--fit", exists=True, help="An ELITR-Bench *_gpt-4-eval.json file."),
    out: Path = typer.Option(None, help="Where to write the weights (default: the shipped file in the installed package)."),
) -> None:
    """Refit the judge's weights on every answer of FILE; print the held-out (leave-one-meeting-out) figures."""
    out = out or package_path("benchmark", WEIGHTS_FILE)
    answers = load_graded(fit_file)
    x = feature_matrix(answers)
    y = np.array([a.gpt4 for a in answers])
    print("held out by meeting:", agreement(held_out(answers, x), y))
    w, mean, scale = fit(x, y)
    print("in sample:", agreement(_predict(x, w, mean, scale), y))
    weights = JudgeWeights(
        features=list(FEATURES),
        weights=[round(float(v), 6) for v in w],
        mean=[round(float(v), 6) for v in mean],
        scale=[round(float(v), 6) for v in scale],
        trained_on=fit_file.name,
    )
    out.write_text(weights.model_dump_json(indent=1) + "\n", encoding="utf-8")
    print(f"weights written to {out}")


if __name__ == "__main__":
    cli()
