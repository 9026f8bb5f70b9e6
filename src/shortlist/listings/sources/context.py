"""One crawl of one source: the fetcher, the API bases, and what the last crawl remembered of
each URL (its validators and the postings it held), so that a 304 vouches for them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from shortlist.listings.sources.fetch import Fetched, Fetcher, PageGone, Validators
from shortlist.listings.sources.models import Board, SourceGone


@dataclass
class PageMemo:
    validators: Validators
    external_ids: list[str]


@dataclass
class ApiBases:
    greenhouse: str
    lever: str
    lever_eu: str
    ashby: str


@dataclass
class CrawlContext:
    fetcher: Fetcher
    bases: ApiBases
    max_pages: int = 500
    previous: dict[str, PageMemo] = field(default_factory=dict)
    """The last crawl's memo of every URL it fetched."""
    memos: dict[str, PageMemo] = field(default_factory=dict)
    """This crawl's, stored when it commits."""

    async def fetch(self, url: str, *, robots: bool = False) -> Fetched:
        """GET ``url``, conditionally if the last crawl fetched it."""
        memo = self.previous.get(url)
        return await self.fetcher.get(url, memo.validators if memo else None, robots=robots)

    def remember(self, url: str, fetched: Fetched, external_ids: list[str]) -> None:
        self.memos[url] = PageMemo(fetched.validators, external_ids)

    def unchanged(self, url: str) -> list[str]:
        """A 304 for ``url``: its postings are those of last time; remembered again."""
        memo = self.previous.get(url, PageMemo(Validators(), []))
        self.memos[url] = memo
        return list(memo.external_ids)

    async def read_board(
        self,
        url: str,
        parse: Callable[[Fetched], Board],
        *,
        gone: str,
        into: Board | None = None,
    ) -> Board:
        """One ATS board's JSON page of postings, into ``into`` (a new board by default): on a
        304 the postings of last time, else ``parse`` off the loop (JSON and every
        description's markup are CPU work) and remembered. A page gone is the source gone
        (``gone`` says which)."""
        try:
            page = await self.fetch(url)
        except PageGone as exc:
            raise SourceGone(f"{gone} ({exc})") from exc
        board = into if into is not None else Board()
        if page.not_modified:
            board.unchanged_ids.update(self.unchanged(url))
            return board
        parsed = await asyncio.to_thread(parse, page)
        board.postings, board.skipped = parsed.postings, parsed.skipped
        self.remember(url, page, [p.external_id for p in board.postings])
        return board
