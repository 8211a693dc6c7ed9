from benchmark.scoring.data import BenchMeeting
from benchmark.scoring.metrics import snapshot_figures, stream_figures
from benchmark.scoring.runner import CaseResult, StreamResult, floor_turns, meeting_duration_s

MEETING = BenchMeeting.model_validate(
    {
        "format": "delegate-bench/1",
        "meeting_id": "m",
        "attendees": ["A", "B", "C"],
        "utterances": [
            {"id": 0, "speaker": "A", "text": "B, how is the report going?", "start": 0, "end": 3},
            {"id": 1, "speaker": "B", "text": "It is almost done, two sections left.", "start": 3, "end": 6},
            {"id": 2, "speaker": "A", "text": "Okay.", "start": 6, "end": 7},
            {"id": 3, "speaker": "C", "text": "I can review it tomorrow morning.", "start": 7, "end": 10},
            {"id": 4, "speaker": "A", "text": "Mhm.", "start": 10, "end": 11},
            {"id": 5, "speaker": "B", "text": "Thanks, I will send it tonight.", "start": 11, "end": 14},
        ],
    }
)


def test_floor_turns_skip_backchannels():
    # B takes the floor after 0, and again after 3 (4 is a backchannel); 4 also precedes B's turn.
    assert floor_turns(MEETING, "B") == [0, 3, 4]
    assert meeting_duration_s(MEETING) == 14


def test_stream_figures():
    r = StreamResult(meeting_id="m", principal="B", utterances=6, duration_s=3600, speaks=[0, 2], floor_taken=[0, 3, 4], latencies_ms=[1, 2], cpu_ms=[0.5, 1.5, 4.0])
    f = stream_figures([r], "local")
    assert f["speak_precision"] == 0.5 and f["speak_recall"] == 1 / 3 and f["speaks_per_hour"] == 2
    assert f["cpu_ms_mean"] == 2.0


def _r(variant: str, scenario: str, spoke: bool, matched: list[str] | None = None) -> CaseResult:
    return CaseResult(
        id=f"m/{variant}/{scenario}/{spoke}", meeting_id="m", variant=variant, scenario=scenario, principal="B",
        spoke=spoke, response="x y z" if spoke else "", reason="", expected_points=["p1", "p2"],
        matched_points=matched or [], strict=len(matched or []) / 2, latency_ms=1.0, words=3 if spoke else 0,
    )


def test_snapshot_figures():
    results = [
        _r("matched", "explicit_cue", True, ["p1", "p2"]),
        _r("matched", "implicit_cue", True, []),
        _r("matched", "chime_in", False),
        _r("mismatched", "implicit_cue", False),
        _r("mismatched", "none", True),
        _r("noisy_name", "explicit_cue", True),
    ]
    f = snapshot_figures(results, "local", "offline", 1.0)
    assert f["response_rate"]["all"] == 2 / 3
    assert f["silence_rate"]["all"] == 0.5 and f["silence_rate"]["none"] == 0.0
    assert f["silence_rate_split"] == {"swapped": 1.0, "engaged": 0.0}
    assert f["noisy_name_response_rate"] == 1.0
    assert f["loose_recall"] == {"responded": 0.5, "end_to_end": 1 / 3}
    assert f["strict_recall"]["responded"] == 0.5
    assert f["meeting_correctness"] == 0.0
