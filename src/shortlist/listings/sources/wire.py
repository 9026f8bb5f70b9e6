"""Reading a fetched body as JSON, the one way adapters do."""

from __future__ import annotations

import json
from typing import Any

from shortlist.errors import TransientError
from shortlist.listings.sources.fetch import Fetched


def json_body(fetched: Fetched) -> Any:
    """The JSON of a response; a body that is not JSON is the vendor's trouble, tried again
    at the next crawl (it closes nothing)."""
    try:
        return json.loads(fetched.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TransientError(f"{fetched.url[:200]} did not answer JSON: {exc}") from exc
