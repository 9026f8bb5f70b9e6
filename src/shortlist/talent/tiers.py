"""The discovery tiers: a queue over ``search_tiers``, one claim = one page of one tier.

    strict  the recruiter's brief as understood (talent/brief.py), 1:1 onto the API's filters:
            the role as a phrase, the place (normalised by the gazetteer, shortlist.places) on
            its city / region / country, the minimum years, the must-have skills
    broad   experience not required, the place widened to its country, the role held in any word
            order and by the names titles give the same work, PDL's taxonomy as a preference
            (roles.pdl_title), nobody strict already found; it waits for strict's first page
    serp    people search on the web: the role quoted, with the place as a hint

A page becomes ``queued`` stubs (written before any enrichment, deduplicated against everyone
the search already attempted and then by the database) and the tier goes back to the queue for
its next page, so the three tiers of a search — and the tiers of many searches — interleave
page by page, and a worker that dies loses at most one page. People a later page brings beyond
the search's shortfall are held on the tier and taken before another page is asked for: a page
is paid for once (PDL bills search per record returned). A tier is only claimed while its
search still falls short (results + candidates in flight < target), which is how paging stops
once there is enough; it ends ``exhausted`` when the provider has no more, or ``failed`` when
the provider fails it (after the adapter's one retry) — the other tiers go on regardless.
"""

from __future__ import annotations

import dataclasses
import logging

from shortlist.config import Settings
from shortlist.db import channels
from shortlist.db.types import AsyncPool
from shortlist.embedding.spaces import Spaces
from shortlist.places import Place, PlaceKind, resolve
from shortlist.privacy import person_keys, suppressed_among
from shortlist.queue import DONE, GIVE_BACK, Batch, LeaseTable, Outcome, Retry, each
from shortlist.talent import marks
from shortlist.talent import repository as repo
from shortlist.talent.constraints import ConstraintKind, Held, Wanted, judge
from shortlist.talent.models import (
    ClaimedTier,
    NewStub,
    SearchBrief,
    SearchStatus,
    Tier,
    TierStatus,
    error_text,
)
from shortlist.talent.roles import title_holds_role
from shortlist.talent.vendors import ledger
from shortlist.talent.vendors.base import (
    DiscoveryPage,
    DiscoveryQuery,
    ProfileStub,
    ProviderError,
    ProviderPaused,
    ProviderQuotaExhausted,
    ProviderRateLimited,
)
from shortlist.talent.vendors.factory import Sources

log = logging.getLogger(__name__)

# PDL bills every record a search returns (Person Search output response): a page asks for
# what the search still lacks, within the provider's bounds (PDL: 1-100).
MIN_PAGE_SIZE = 1
MAX_PAGE_SIZE = 100


def recognised_role(brief: SearchBrief) -> str | None:
    """The brief's role when the parser recognised one (not its whole text kept as the role)."""
    if not brief.role or brief.role == " ".join(brief.query.split())[:200]:
        return None
    return brief.role


def brief_place(brief: SearchBrief) -> Place | None:
    """The brief's place as the gazetteer knows it (None: no place, or one it does not know)."""
    return resolve(brief.location) if brief.location else None


def strict_query(brief: SearchBrief) -> DiscoveryQuery:
    """The brief as understood, 1:1; a brief with nothing recognised asks for its own text as
    the role, so tier 1 always asks the provider something."""
    return DiscoveryQuery(
        role=brief.role or " ".join(brief.query.split())[:200],
        location=brief.location,
        min_years=brief.min_years_experience,
        skills=brief.skills,
        place=brief_place(brief),
    )


def wider_place(place: Place | None) -> Place | None:
    """The place's country: a city or a region widens to it (the brief's judge keeps people
    elsewhere in the country as maybes, ranked after the city's own); a country or a remote
    brief stays as it is."""
    if place is None or place.kind in (PlaceKind.country, PlaceKind.remote):
        return place
    return dataclasses.replace(
        place,
        kind=PlaceKind.country,
        name=(place.country or "").title(),
        locality=None,
        region=None,
    )


def broad_query(brief: SearchBrief) -> DiscoveryQuery:
    """The role widened (every word in any order, its noun by its synonyms), the place to its
    country, the years no longer required (``widen``: a profile stating none is asked for; one
    stating fewer than the minimum is not, the brief's judge would refuse it); the skills do
    not exclude, and whoever the strict query finds is left out (the strict tier pays for them
    already). A place the gazetteer does not know is dropped."""
    strict = strict_query(brief)
    return DiscoveryQuery(
        role=strict.role,
        min_years=strict.min_years,
        skills=brief.skills,
        place=wider_place(strict.place),
        widen=True,
        exclude=strict,
    )


def serp_text(brief: SearchBrief) -> str:
    """The web search's words: the role as a quoted phrase (or the brief's own words when no
    role was recognised); the place goes with it as a hint (:func:`brief_place`)."""
    if brief.role:
        return '"' + " ".join(brief.role.replace('"', " ").split()) + '"'
    return " ".join(brief.query.split())[:200]


def page_size(wanted: int) -> int:
    """How many records to ask for: what the search still wants (its shortfall, within its
    credit budget), within the provider's bounds."""
    return max(MIN_PAGE_SIZE, min(wanted, MAX_PAGE_SIZE))


def acceptable_web_hit(stub: ProfileStub, role: str | None, wanted: Wanted | None) -> bool:
    """Whether a web result may be someone the brief accepts, read from the page itself before
    anyone pays to enrich them: not when its title says for sure they do other work (and
    nothing else on the page says they do this), nor when it shows them in a place the brief
    excludes (another country, as the brief's judge would find after the purchase)."""
    said_other_work = bool(role and stub.headline and not title_holds_role(role, stub.headline))
    if said_other_work and not (role and title_holds_role(role, stub.page_text)):
        return False
    if wanted is not None and wanted.place is not None and stub.location:
        held = Held(location=stub.location, years=None, skills=())
        failure = judge(wanted, held).failure
        if failure is not None and failure.kind is ConstraintKind.location:
            return False
    return True


class TierQueue:
    """:class:`shortlist.queue.Queue` over ``search_tiers``."""

    name = "backfill_tiers"
    channel: str | None = channels.BACKFILL
    leases = LeaseTable(
        "search_tiers", outcome=repo.QUERIES["tier_outcome"], records=frozenset({"retry"})
    )

    def __init__(self, pool: AsyncPool, settings: Settings, sources: Sources, spaces: Spaces):
        self.pool = pool
        self.spaces = spaces
        self.settings = settings
        self.sources = sources

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[ClaimedTier]:
        return await repo.claim_tiers(
            self.pool, worker_id, limit, lease, records_first=self.sources.records_from_search
        )

    async def handle(self, batch: Batch[ClaimedTier]) -> None:
        await each(batch, self.run_page)

    async def _discover(self, claimed: ClaimedTier) -> DiscoveryPage:
        """One page from the tier's provider, its calls written to the credit ledger."""
        sources = self.sources
        brief, page = claimed.search, claimed.next_page
        with ledger.collecting() as calls:
            try:
                if claimed.tier is Tier.serp:
                    place = brief_place(brief)
                    if place is None:
                        return await sources.serp.search(serp_text(brief), page)
                    return await sources.serp.search(serp_text(brief), page, place)
                query = strict_query(brief) if claimed.tier is Tier.strict else broad_query(brief)
                async with self.pool.connection() as conn:
                    wanted = await repo.records_wanted(
                        conn, brief.search_id, records_first=self.sources.records_from_search
                    )
                return await sources.talent.discover(query, page, page_size(wanted), claimed.cursor)
            finally:
                await repo.record_provider_calls(
                    self.pool, brief.search_id, claimed.tier, calls, discovery=True
                )

    async def run_page(self, batch: Batch[ClaimedTier], claimed: ClaimedTier) -> Outcome:
        search_id = claimed.search.search_id
        # Everyone the search already attempted, loaded BEFORE the call: the hot-path filter.
        # The unique constraint on (search_id, external_id) makes dedup correct under races.
        known = await repo.known_external_ids(self.pool, search_id)
        if claimed.held:
            # People an earlier page brought beyond the shortfall: taken before the provider
            # is asked (and paid) for another page.
            fresh = [
                s
                for s in claimed.held
                if s.external_id not in known
                and (s.profile is not None or known.isdisjoint(s.aliases))
            ]
            return await self._record_page(
                batch, claimed, fresh, not claimed.provider_done, fetched=False
            )
        try:
            page = await self._discover(claimed)
        except (ProviderRateLimited, ProviderPaused) as exc:
            # Throttled: not this tier's failure. Wait out the provider's pause, no hammering.
            delay = exc.retry_after if exc.retry_after is not None else self.settings.retry_delay
            log.info(
                "search %s tier %s deferred %.2fs: %s",
                search_id,
                claimed.tier,
                delay,
                error_text(exc),
            )
            return Retry(after=delay, reason=error_text(exc))
        except ProviderError as exc:
            # Timeout / 5xx after the adapter's one retry, a rejected request, or an account
            # out of credit (no retry loop: it says so instead): this tier is done for; the
            # others go on, and a search retry re-queues it.
            ended = (
                TierStatus.quota_exhausted
                if isinstance(exc, ProviderQuotaExhausted)
                else TierStatus.failed
            )
            try:
                async with self.pool.connection() as conn, conn.transaction():
                    await repo.lock_search(conn, search_id)
                    if await repo.tier_failed(
                        conn, claimed.id, error=error_text(exc), status=ended
                    ):
                        await repo.touch_search(conn, search_id)
                    if not await batch.finish(conn, {claimed.id: DONE}):
                        raise _Discard("claim lost (lease expired and re-claimed)")
            except _Discard as why:
                log.info("search %s tier %s: failure dropped: %s", search_id, claimed.tier, why)
                return GIVE_BACK
            log.warning("search %s tier %s %s: %s", search_id, claimed.tier, ended, error_text(exc))
            async with self.pool.connection() as conn, conn.transaction():
                await repo.complete_search_if_done(conn, search_id)
            return DONE
        page = await self._without_forgotten(page)
        stubs, has_more = self._fresh_stubs(
            page,
            known,
            role=recognised_role(claimed.search),
            wanted=Wanted.of(claimed.search.location, None, ()),
        )
        # People the recruiter already handled are in `known`; the page counts them.
        await marks.record_hidden_discovered(
            self.pool,
            search_id,
            [s.external_id for s in page.stubs if s.external_id in known],
            self.spaces.active().space,
        )
        return await self._record_page(
            batch, claimed, stubs, has_more, fetched=True, cursor=page.cursor
        )

    async def _without_forgotten(self, page: DiscoveryPage) -> DiscoveryPage:
        """The page without people on the suppression list (shortlist.privacy), checked by
        every id and contact a discovery answer gives, before anyone is enriched (bought)."""

        def keys(stub: ProfileStub) -> set[str]:
            found = {stub.external_id, *stub.aliases}
            if stub.profile is not None:
                found |= person_keys(
                    email=stub.profile.email,
                    profile_url=stub.profile.profile_url,
                    external_id=stub.profile.external_id,
                )
            return found

        by_stub = [(stub, keys(stub)) for stub in page.stubs]
        async with self.pool.connection() as conn:
            suppressed = await suppressed_among(
                conn, set().union(*(k for _, k in by_stub)), self.settings.privacy_key
            )
        if not suppressed:
            return page
        kept = [stub for stub, k in by_stub if not (k & suppressed)]
        log.info("tier page: %d forgotten people left out", len(page.stubs) - len(kept))
        # has_more stays the provider's: the page had people, the next one may have more.
        return dataclasses.replace(page, stubs=kept, has_more=page.has_more and bool(page.stubs))

    @staticmethod
    def _fresh_stubs(
        page: DiscoveryPage,
        known: set[str],
        *,
        role: str | None = None,
        wanted: Wanted | None = None,
    ) -> tuple[list[NewStub], bool]:
        fresh: dict[str, NewStub] = {}
        page_ids: list[set[str]] = []
        for stub in page.stubs:
            if stub.profile is None and not acceptable_web_hit(stub, role, wanted):
                continue
            # Known by any of their ids (a PDL record's older LinkedIn slugs, its PDL id): not
            # again — except a whole record known only by another id, which may still spare
            # the enrichment of that person's queued web hit (repo.insert_stubs attaches it;
            # the database decides, under the search's lock).
            ids = {stub.external_id, *stub.aliases}
            if stub.external_id in known or (stub.profile is None and not known.isdisjoint(ids)):
                continue
            if any(not ids.isdisjoint(taken) for taken in page_ids):
                continue  # the same person twice on one page
            page_ids.append(ids)
            fresh.setdefault(
                stub.external_id,
                NewStub(stub.external_id, stub.display_name[:200], stub.profile, stub.aliases),
            )
        # A page of people all known still advances (the next page may have new ones); an
        # empty page ends the tier whatever has_more says, so a confused provider cannot keep
        # it paging forever.
        return list(fresh.values()), page.has_more and bool(page.stubs)

    async def _record_page(
        self,
        batch: Batch[ClaimedTier],
        claimed: ClaimedTier,
        stubs: list[NewStub],
        has_more: bool,
        *,
        fetched: bool,
        cursor: str | None = None,
    ) -> Outcome:
        search_id = claimed.search.search_id
        async with self.pool.connection() as conn:
            try:
                async with conn.transaction():
                    search = await repo.lock_search(conn, search_id)
                    if search is None or search["status"] != SearchStatus.running:
                        # Went stale or complete meanwhile: keep the page for a resume.
                        raise _Discard("search is no longer running")
                    # Every tier's first page goes in whole: the three run in parallel and the
                    # strict tier's strongest matches must not lose the race to a faster
                    # broad page. Later pages only fill the shortfall, so nobody is enriched
                    # (a paid, ~8 s call) beyond the target; the rest are held on the tier.
                    take = stubs
                    if claimed.next_page > 1 or not fetched:
                        shortfall = await repo.search_shortfall(
                            conn,
                            search_id,
                            records_first=self.sources.records_from_search
                            and claimed.tier is not Tier.serp,
                        )
                        take = stubs[: max(shortfall, 0)]
                    found = await repo.insert_stubs(conn, search_id, claimed.tier, take)
                    status = await repo.tier_page_done(
                        conn,
                        claimed.id,
                        found=found,
                        has_more=has_more,
                        fetched=fetched,
                        held=stubs[len(take) :],
                        cursor=cursor,
                    )
                    if status is None:
                        raise _Discard("tier no longer running (out of credit, or reaped)")
                    await repo.touch_search(conn, search_id)
                    if not await batch.finish(conn, {claimed.id: DONE}):
                        raise _Discard("claim lost (lease expired and re-claimed)")
            except _Discard as why:
                log.info("search %s tier %s: page dropped: %s", search_id, claimed.tier, why)
                # Rolled back: the worker gives the tier back, if it is still ours.
                return GIVE_BACK
        log.info(
            "search %s tier %s %s: %d new candidates, %d held (%s)",
            search_id,
            claimed.tier,
            f"page {claimed.next_page}" if fetched else "held people",
            found,
            len(stubs) - len(take),
            status,
        )
        if status is TierStatus.exhausted:
            async with self.pool.connection() as conn, conn.transaction():
                await repo.complete_search_if_done(conn, search_id)
        return DONE


class _Discard(Exception):
    """Roll the page's transaction back: its result must not be written."""
