"""The results stream's frames: differences in rank order."""

from __future__ import annotations

import uuid

from shortlist.api.routes.events import Snapshot, StreamState, frames_for
from shortlist.talent import repository as repo
from tests.integration.test_web_pages import parse_sse


def _snapshot(status: str, rows: list[int], attempts: list[tuple[int, str]]) -> Snapshot:
    record = repo.SearchRecord(
        id=uuid.UUID(int=1),
        owner_token_id=1,
        query="q",
        role=None,
        location=None,
        min_years_experience=None,
        skills=[],
        status=status,
        result_count=len(rows) and max(rows),
        target_count=15,
        backfill_started=True,
        created_at=None,  # type: ignore[arg-type]
        last_progress_at=None,  # type: ignore[arg-type]
        finished_at=None,
    )
    busy = sum(1 for _, s in attempts if s in ("queued", "running"))
    return Snapshot(
        record,
        [{"rank": r} for r in rows],
        {"queued": busy},
        [{"candidateId": i, "status": s, "lastError": None} for i, s in attempts],
    )


def test_frames_are_differences_in_rank_order() -> None:
    state = StreamState(last_rank=0)
    first = parse_sse("".join(frames_for(state, _snapshot("running", [1, 2], [(7, "queued")]))))
    assert [(e, d.get("rank", d.get("candidateId"))) for e, d in first] == [
        ("result", 1),
        ("result", 2),
        ("candidate", 7),
        ("status", None),
    ]
    # nothing changed: nothing sent
    assert frames_for(state, _snapshot("running", [1, 2], [(7, "queued")])) == []
    # a gap (rank 4 without 3) stops at the gap; the candidate failed; no duplicate of 1..2
    second = parse_sse(
        "".join(frames_for(state, _snapshot("running", [4], [(7, "failed_no_email")])))
    )
    assert [(e, d.get("status")) for e, d in second] == [
        ("candidate", "failed_no_email"),
        ("status", "running"),  # its candidates-by-status changed
    ]
    assert state.last_rank == 2
    # the candidate left the attempts: it succeeded (and was appended as rank 3)
    third = parse_sse("".join(frames_for(state, _snapshot("complete", [3, 4], []))))
    assert [(e, d.get("rank"), d.get("status")) for e, d in third] == [
        ("result", 3, None),
        ("result", 4, None),
        ("candidate", None, "succeeded"),
        ("status", None, "complete"),
    ]
