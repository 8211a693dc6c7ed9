"""Reading the log as a person: one line per event, and `python -m delegate audit MEETING_ID`."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from delegate.config import load_settings
from delegate.store.base import AuditEvent, AuditKind
from delegate.store.sqlite import read_events


def _summary(event: AuditEvent) -> str:
    p = event.payload
    match event.kind:
        case AuditKind.utterance:
            return f"{p.get('speaker')}: {p.get('text')}"
        case AuditKind.decision:
            said = p.get("speak") or ""
            head = f"SPEAK {said!r}" if said.strip() else "silent"
            if p.get("approval") == "pending":
                head = f"HOLD {said!r}"
            return f"{head} [{p.get('scenario')}, {p.get('engine')}] {p.get('reason')}"
        case AuditKind.decision_dropped:
            return f"dropped: {p.get('reason')}"
        case AuditKind.action:
            return f"{p.get('status')} {p.get('action_type')} {p.get('id')}: {p.get('description')}"
        case AuditKind.feedback:
            target = f"action {p['action_id']}" if p.get("action_id") else f"decision {event.utterance_id}"
            return f"{p.get('verdict')} {target} {p.get('comment') or ''}".rstrip()
        case AuditKind.speech:
            cut = f" (cut at {p.get('played_ms')} ms: {p.get('reason')})" if p.get("cut") else ""
            return f"VOICE {p.get('said')!r}{cut}"
        case AuditKind.echo:
            return f"echo of {p.get('of_utterance_id')}: {p.get('text')!r}"
        case AuditKind.speech_resolved:
            why = f" ({p['reason']})" if p.get("reason") else ""
            return f"speech {p.get('status')}{why}: {p.get('text')!r}"
        case AuditKind.meeting_created:
            principal = p.get("principal") or {}
            return (
                f"principal {principal.get('name')}, engine {p.get('engine')}, attendees {p.get('attendees')}"
            )
        case _:
            return json.dumps(p, ensure_ascii=False)


def format_event(event: AuditEvent) -> str:
    when = datetime.fromtimestamp(event.ts, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    utt = "" if event.utterance_id is None else str(event.utterance_id)
    return f"{event.seq:>7}  {when}  {event.kind:<16}  {utt:>5}  {_summary(event)}"


async def _postgres_events(url: str, meeting_id: str) -> list[AuditEvent]:
    from delegate.store.postgres import PostgresStore

    store = PostgresStore(url, pool_size=2)
    await store.start()
    try:
        return await store.events(meeting_id)
    finally:
        await store.close()


def print_audit(meeting_id: str, db: Path | None = None, *, key: str | None = None, hint: str = "") -> None:
    """`python -m delegate audit MEETING_ID`: the meeting's log, oldest first; exit 1 when there is none.

    `key`: where the meeting lives in the log when that is not its id (a tenant's, see `server.auth.audit_id`);
    `hint`: said after "no meeting" when there is none. Every failure is one line on stderr."""
    settings = load_settings()
    key = key or meeting_id
    if db is None and settings.database_url:
        where = "PostgreSQL"
        try:
            events = asyncio.run(_postgres_events(settings.database_url, key))
        except ModuleNotFoundError:
            raise  # the postgres extra, named by the command line
        except Exception as e:  # unreachable, refused, no such database: its own words, never the URL
            _stop(f"cannot read the audit log in PostgreSQL (DELEGATE_DATABASE_URL): {e}")
    else:
        path = db if db is not None else settings.db_path
        where = str(path)
        if not path.exists():
            _stop(f"no audit database at {path}")
        if path.is_dir():
            _stop(f"{path} is a folder: --db takes the audit database file, --data-dir the folder it is in")
        try:
            events = read_events(path, key)
        except sqlite3.DatabaseError as e:
            _stop(f"{path} is not an audit database ({e})")
    if not events:
        _stop(f"no meeting {meeting_id!r} in the audit log at {where}{f'; {hint}' if hint else ''}")
    for event in events:
        print(format_event(event))


def _stop(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(1)
