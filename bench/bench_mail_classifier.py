"""mail-classifier: is this e-mail a job post? Precision and recall of "posted" on the labelled
set's held-out half (``tests/data/mail/labelled/``, its README names the sources).

A message counts as posted when the intake's whole reading would post it: the parser
(:func:`shortlist.listings.mail.parse.read_message`: automatic mail by its headers and
structure, then the text) and the server's step (:func:`to_listing`: a title, a city, a
company). Precision: of the messages posted, the share that are job posts (target 0.95).
Recall: of the job posts, the share posted (target 0.90). The dev half is what the rules were
written against; the held-out half is the figure that counts. ``--smoke`` reads the same set.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from bench.common import Context, Record, Stat

NAME = "mail-classifier"
LABELLED = Path(__file__).parent.parent / "tests" / "data" / "mail" / "labelled"
PRECISION_TARGET = 0.95
RECALL_TARGET = 0.90


@dataclass(frozen=True)
class Outcome:
    file: str
    job: bool
    posted: bool
    why: str


def classify(raw: bytes) -> tuple[bool, str]:
    """(posted, the reason it was not: its ``rejected_as`` and text)."""
    from shortlist.errors import BadInput
    from shortlist.listings.mail.listing import to_listing
    from shortlist.listings.mail.parse import NoJob, read_message

    try:
        to_listing(read_message(raw), "Intake Company")
    except NoJob as exc:
        return False, f"{exc.kind}: {exc}"
    except BadInput as exc:
        return False, f"bad input: {exc}"
    return True, ""


def evaluate(half: str) -> list[Outcome]:
    from shortlist import places

    places.load()
    with (LABELLED / "labels.tsv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["half"] == half]
    out = []
    for row in rows:
        posted, why = classify((LABELLED / row["file"]).read_bytes())
        out.append(Outcome(row["file"], row["label"] == "job", posted, why))
    return out


def scores(outcomes: list[Outcome]) -> tuple[float, float, int, int, int]:
    """(precision, recall, true positives, false positives, false negatives)."""
    tp = sum(1 for o in outcomes if o.job and o.posted)
    fp = sum(1 for o in outcomes if not o.job and o.posted)
    fn = sum(1 for o in outcomes if o.job and not o.posted)
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    return precision, recall, tp, fp, fn


def run(ctx: Context) -> list[Record]:
    records: list[Record] = []
    for half in ("heldout", "dev"):
        outcomes = evaluate(half)
        precision, recall, tp, fp, fn = scores(outcomes)
        wrong = [o for o in outcomes if o.job != o.posted]
        for o in wrong:
            ctx.log(f"{half}: {o.file} labelled {'job' if o.job else 'not a job'}: {o.why}")
        jobs = sum(1 for o in outcomes if o.job)
        note = (
            f"{half} half: {len(outcomes)} messages ({jobs} job posts); tp {tp}, fp {fp}, fn {fn}"
        )
        records += [
            Record(
                NAME,
                f"precision of posted ({half})",
                Stat.one(precision),
                Stat.one(1.0),
                target=PRECISION_TARGET if half == "heldout" else None,
                unit="%",
                baseline_name="every post a job",
                note=note,
            ),
            Record(
                NAME,
                f"recall of job posts ({half})",
                Stat.one(recall),
                Stat.one(1.0),
                target=RECALL_TARGET if half == "heldout" else None,
                unit="%",
                baseline_name="every job posted",
                note=note,
            ),
        ]
    return records
