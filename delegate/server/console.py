"""The web console's routes: one page (brief, watch and approve, summary) and its static files.

The console is a single page: `/` and `/console/{meeting_id}` return the same HTML, and its script picks
the view from the path and switches views with `history.pushState`, so the bearer token typed into the
page stays in that tab's memory and never touches the URL or the browser's storage. The page calls the
same REST and server-sent-event endpoints as any client; nothing here reads a meeting.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

from delegate.resources import package_path
from delegate.server.protocol import MEETING_ID, ErrorCode, ProtocolError

STATIC = package_path("delegate.server", "static", "console")
ASSETS_URL = "/static/console"

# The page loads only its own files and talks only to this origin; no inline script, no framing,
# and no Referer carrying a meeting id elsewhere.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


def _page() -> Response:
    return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


@router.get("/")
async def home() -> Response:
    return _page()


@router.get("/console/{meeting_id}")
async def meeting_page(meeting_id: str) -> Response:
    if not MEETING_ID.fullmatch(meeting_id):
        raise ProtocolError(ErrorCode.bad_meeting_id)
    return _page()


def mount(app: FastAPI) -> None:
    """Add the console's pages and its static files to `app`."""
    app.include_router(router)
    app.mount(ASSETS_URL, StaticFiles(directory=STATIC), name="console-static")
