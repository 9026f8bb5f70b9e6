"""Old home of :mod:`shortlist.status`, :mod:`shortlist.reindex` and :mod:`shortlist.redact`,
kept only for ``cli/listings_ops.py`` and ``listings/indexer.py`` until they import those
(issue 10); delete it then."""

from shortlist.redact import redact_emails
from shortlist.reindex import reindex
from shortlist.status import collect_status

__all__ = ["collect_status", "redact_emails", "reindex"]
