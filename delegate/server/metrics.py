"""Prometheus metrics of one server: decisions, speak rate, decision latency, sessions, errors, speech input."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

from delegate.models import Decision

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """A registry per server, so tests can run several servers in one process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.decisions = Counter(
            "delegate_decisions", "Decisions sent to clients.", ["engine", "spoke"], registry=self.registry
        )
        self.dropped = Counter(
            "delegate_decisions_dropped",
            "Decisions dropped because a newer utterance came first.",
            registry=self.registry,
        )
        self.speak_rate = Gauge(
            "delegate_speak_rate", "Share of decisions that spoke, since start.", registry=self.registry
        )
        self.latency = Histogram(
            "delegate_decision_latency_seconds",
            "Utterance received to decision recorded and sent.",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=self.registry,
        )
        self.utterances = Counter("delegate_utterances", "Final utterances received.", registry=self.registry)
        self.open_sessions = Gauge("delegate_open_sessions", "Meeting sessions open.", registry=self.registry)
        self.connections = Gauge(
            "delegate_connections", "WebSocket connections open.", registry=self.registry
        )
        self.errors = Counter(
            "delegate_errors", "Error frames and responses, by code.", ["code"], registry=self.registry
        )
        self.asr_streams = Gauge(
            "delegate_asr_streams", "Audio streams open (meetings being transcribed).", registry=self.registry
        )
        self.asr_capacity = Gauge(
            "delegate_asr_capacity",
            "Audio streams this server transcribes at once (DELEGATE_ASR_MAX_STREAMS); more get asr_busy.",
            registry=self.registry,
        )
        self.asr_queue_wait = Histogram(
            "delegate_asr_queue_wait_seconds",
            "Speech decode queued to started, by kind (final or partial).",
            ["kind"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0),
            registry=self.registry,
        )
        self.asr_partials_shed = Counter(
            "delegate_asr_partials_shed",
            "Partial transcripts dropped undecoded: superseded by a newer one or the final, or under load.",
            registry=self.registry,
        )
        self._spoke = 0
        self._total = 0

    def decision(self, decision: Decision, seconds: float) -> None:
        self.decisions.labels(engine=decision.engine, spoke=str(decision.spoke).lower()).inc()
        self.latency.observe(seconds)
        self._total += 1
        self._spoke += decision.spoke
        self.speak_rate.set(self._spoke / self._total)

    def error(self, code: str) -> None:
        self.errors.labels(code=code).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
