"""The per-candidate pipeline: a queue over ``search_candidates``, one claim = one person.

    enrich → ingest into the corpus (with its vector) → score against the query → append
    → bump resultCount                                    (one commit, per candidate)

Each stub is its own task (batch size 1, ``backfill_concurrency`` in flight), so a slow or hung
enrichment holds back only itself: the time to a result is bounded by the median, not the tail. The
commit ends the lease first (``Batch.finish``): a worker that lost its claim (reaped, retried and
re-claimed by someone else) writes nothing, and the unique
``(search_id, candidate_id)`` catches whatever slips past, so a person is appended once.

A profile enriched but not embedded because the embedder throttled stays on the stub
(``enriched_profile``), and the next claim ingests it without a second enrichment.

Outcomes: no e-mail → ``failed_no_email`` (the profile is still ingested; nobody without an
e-mail is a result, internal or backfilled — unless the provider says it holds one it does not
show on this plan, ``email_on_file``: such a person is reached through the provider and is a
result; an enrichment that required an address and was refused for want of one,
``ProviderNoEmail``, ends the same, with nothing to ingest); outside the brief (a hard
constraint of :mod:`shortlist.talent.constraints` not met: another city, fewer years) or a
role score under the relevance floor → ``below_threshold`` (ingested, not appended, not
counted, the reason in ``last_error``); otherwise appended with its fit to the whole brief as
the score; timeout / 5xx after the adapter's one retry → ``failed_transient``; 404 / other 4xx
/ malformed → ``failed_permanent``.
A 429 or a paused provider is not the candidate's fault: the stub goes back to the queue and
the worker backs off for the provider's ``Retry-After`` (up to MAX_THROTTLED_ATTEMPTS claims).
"""

from __future__ import annotations

import contextlib
import logging

import psycopg

from shortlist.db import channels
from shortlist.db.types import AsyncPool
from shortlist.embedding.base import EmbeddingPermanentError, EmbeddingTransientError
from shortlist.embedding.model_space import ModelSpace
from shortlist.embedding.spaces import Spaces
from shortlist.errors import TransientError
from shortlist.privacy import ingest_allowed, is_suppressed, person_keys, scrub_attempt
from shortlist.queue import DONE, GIVE_BACK, REQUEUE, Batch, LeaseTable, Outcome, each
from shortlist.talent import headline
from shortlist.talent import repository as repo
from shortlist.talent.constraints import Wanted, held_of, judge
from shortlist.talent.models import CandidateStatus, ClaimedStub, Tier, error_text
from shortlist.talent.repository import CandidateRecord
from shortlist.talent.vendors import ledger
from shortlist.talent.vendors.base import (
    Profile,
    ProviderNoEmail,
    ProviderPaused,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
)
from shortlist.talent.vendors.factory import Sources

log = logging.getLogger(__name__)

# Claims of one stub that may end throttled (429, paused provider, embedder throttling) before
# it is failed forward as failed_transient instead of being put back once more.
MAX_THROTTLED_ATTEMPTS = 5
NO_EMAIL = "profile has no e-mail address"
FORGOTTEN = "this person asked to be forgotten"


class MalformedProfile(ProviderRejected):
    """The provider answered, but with a profile the corpus cannot hold."""


def _cut(text: str | None, limit: int) -> str:
    return (text or "").strip()[:limit]


def candidate_record(profile: Profile, tier: Tier) -> CandidateRecord:
    """The profile cut to the corpus schema's limits. Over-long prose is truncated (it is not the
    candidate's fault); a profile without a name, or with an impossible e-mail, is malformed."""
    full_name = _cut(profile.full_name, 200)
    if not full_name:
        raise MalformedProfile(f"profile {profile.external_id} has no name")
    email = (profile.email or "").strip() or None
    if email is not None and (len(email) > 320 or "@" not in email):
        raise MalformedProfile(f"profile {profile.external_id} has an invalid e-mail address")
    # vendors.base.Profile.email_on_file (PDL Free plans: the address exists, not shown).
    on_file = email is None and profile.email_on_file
    years = profile.years_experience
    skills = list(dict.fromkeys(s.strip()[:100] for s in profile.skills if s and s.strip()))
    return CandidateRecord(
        external_id=profile.external_id,
        source="serp" if tier is Tier.serp else "talent_api",
        full_name=full_name,
        headline=_cut(profile.headline, 500),
        role_title=_cut(profile.role_title, 200),
        role_family=_cut(profile.role_family, 100),
        skills=skills[:100],
        years_experience=years if years is not None and 0 <= years <= 80 else None,
        location=_cut(profile.location, 200),
        email=email,
        summary=_cut(profile.summary, 20000),
        profile_url=_cut(profile.profile_url, 2000) or None,
        email_on_file=on_file,
        aliases=tuple(a for a in profile.aliases if a and a != profile.external_id)[:50],
    )


class CandidateQueue:
    """:class:`shortlist.queue.Queue` over ``search_candidates``."""

    name = "backfill_candidates"
    channel: str | None = channels.BACKFILL
    leases = LeaseTable("search_candidates", outcome=REQUEUE)

    def __init__(
        self,
        pool: AsyncPool,
        spaces: Spaces,
        sources: Sources,
        *,
        min_score: float = 0.0,
        privacy_key: str = "",
    ):
        self.pool = pool
        self.spaces = spaces
        self.sources = sources
        self.min_score = min_score
        self.privacy_key = privacy_key

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[ClaimedStub]:
        return await repo.claim_candidates(
            self.pool, worker_id, limit, lease, records_first=self.sources.records_from_search
        )

    async def handle(self, batch: Batch[ClaimedStub]) -> None:
        await each(batch, self.process)

    async def _enrich(self, stub: ClaimedStub) -> Profile:
        """The stub's profile: the one discovery already gave, or one paid enrichment (written
        to the credit ledger)."""
        if stub.enriched is not None:
            return stub.enriched
        with ledger.collecting() as calls:
            try:
                return await self.sources.talent.enrich(stub.external_id)
            finally:
                await repo.record_provider_calls(
                    self.pool, stub.search_id, stub.tier, calls, discovery=False, attempt=stub.id
                )

    async def _forgotten(self, keys: set[str]) -> bool:
        return await is_suppressed(self.pool, keys, self.privacy_key)

    async def process(self, batch: Batch[ClaimedStub], stub: ClaimedStub) -> Outcome:
        # A forgotten person (shortlist.privacy) is neither bought nor stored: checked by the
        # stub's id before the enrichment, and by every id and contact of the profile after.
        if await self._forgotten({stub.external_id}):
            return await self._forget_stub(batch, stub)
        try:
            profile = await self._enrich(stub)
            if await self._forgotten(
                person_keys(
                    email=profile.email,
                    profile_url=profile.profile_url,
                    external_id=profile.external_id,
                )
            ):
                return await self._forget_stub(batch, stub)
            record = candidate_record(profile, stub.tier)
            # Embedded here, outside the transaction, with the indexer's own text for the row,
            # by the active model, which the search's query vector is made to match.
            model = self.spaces.active()
            text = await repo.candidate_text(self.pool, record)
            try:
                await repo.query_in_space(self.pool, stub.search_id, model)
                [vector] = await model.embedder.embed([text])
            except EmbeddingTransientError:
                if stub.enriched is None:  # the next claim ingests it without enriching again
                    with contextlib.suppress(_ClaimLost):
                        async with self.pool.connection() as conn, conn.transaction():
                            await repo.keep_enriched_profile(conn, stub.id, profile)
                            if not await batch.finish(conn, {stub.id: GIVE_BACK}):
                                raise _ClaimLost from None
                raise
        except (ProviderRateLimited, ProviderPaused, EmbeddingTransientError) as exc:
            return await self._throttled(batch, stub, exc)
        except (ProviderTimeout, ProviderUnavailable) as exc:
            return await self._fail(batch, stub, CandidateStatus.failed_transient, str(exc))
        except ProviderQuotaExhausted as exc:
            await self._out_of_credit(stub, exc)
            return await self._fail(batch, stub, CandidateStatus.failed_permanent, str(exc))
        except ProviderNoEmail as exc:
            return await self._fail(batch, stub, CandidateStatus.failed_no_email, str(exc))
        except (ProviderRejected, EmbeddingPermanentError) as exc:
            return await self._fail(batch, stub, CandidateStatus.failed_permanent, str(exc))
        try:
            return await self._commit(batch, stub, record, vector, model.space)
        except psycopg.errors.UndefinedColumn as exc:
            # The model switched and the old space was dropped meanwhile: reload, do it again.
            await self.spaces.refresh()
            raise EmbeddingTransientError(f"embedding model changed: {exc}") from exc

    async def _forget_stub(self, batch: Batch[ClaimedStub], stub: ClaimedStub) -> Outcome:
        """The attempt ends failed_permanent and keeps no trace of who it was."""
        outcome = await self._fail(batch, stub, CandidateStatus.failed_permanent, FORGOTTEN)
        async with self.pool.connection() as conn, conn.transaction():
            await repo.lock_search(conn, stub.search_id)
            await scrub_attempt(conn, stub.id)
        return outcome

    async def _out_of_credit(self, stub: ClaimedStub, exc: ProviderQuotaExhausted) -> None:
        """No credit left to enrich anyone: the tiers that only find people to enrich stop,
        visibly, rather than page on for people nobody can enrich."""
        async with self.pool.connection() as conn, conn.transaction():
            await repo.lock_search(conn, stub.search_id)
            ended = await repo.enrichment_out_of_credit(
                conn, stub.search_id, error_text(f"enrichment out of credit: {exc}")
            )
        if ended:
            log.warning("search %s: serp tier stopped, enrichment out of credit", stub.search_id)

    async def _throttled(
        self, batch: Batch[ClaimedStub], stub: ClaimedStub, exc: TransientError
    ) -> Outcome:
        if stub.attempts >= MAX_THROTTLED_ATTEMPTS:
            return await self._fail(
                batch,
                stub,
                CandidateStatus.failed_transient,
                f"throttled on {stub.attempts} attempts: {exc}",
            )
        # Raised to the worker loop, which gives the stub back (release → queued) and waits the
        # provider's Retry-After before claiming again.
        raise exc

    async def _commit(
        self,
        batch: Batch[ClaimedStub],
        stub: ClaimedStub,
        record: CandidateRecord,
        vector: list[float],
        space: ModelSpace,
    ) -> Outcome:
        """Ingest + append + status, one transaction, under the lease check."""
        outcome: str
        facts: headline.AppendFacts | None = None
        try:
            async with self.pool.connection() as conn, conn.transaction():
                # Checked again where it commits, under the erasure lock (taken first, as an
                # erasure does): an erasure between the check after the enrichment and here
                # would otherwise be followed by this ingest.
                keys = {stub.external_id} | person_keys(
                    email=record.email,
                    profile_url=record.profile_url,
                    external_id=record.external_id,
                )
                allowed = await ingest_allowed(conn, keys, self.privacy_key)
                # The search row first, as every transaction that writes a search's work
                # (see queries.sql): one lock order, no deadlock with a retry.
                await repo.lock_search(conn, stub.search_id)
                if not allowed:
                    await repo.finish_candidate(
                        conn, stub.id, CandidateStatus.failed_permanent, error=FORGOTTEN
                    )
                    await scrub_attempt(conn, stub.id)
                    await repo.touch_search(conn, stub.search_id)
                    outcome = FORGOTTEN
                else:
                    candidate_id = await repo.upsert_candidate(conn, record, vector, space)
                    score = await repo.backfill_score(conn, stub.search_id, candidate_id, space)
                    search = await repo.get_search(conn, stub.search_id)
                    assert search is not None, "searches are never deleted under their backfill"
                    brief = search.understood()
                    judgement = judge(
                        Wanted.of(brief.location, brief.min_years_experience, brief.skills),
                        held_of(record),
                    )
                    failure = judgement.failure
                    if record.email is None and not record.email_on_file:
                        status, error = CandidateStatus.failed_no_email, NO_EMAIL
                        outcome = "no e-mail"
                    elif failure is not None:
                        # As the relevance floor: ingested (it was paid for), not a result, and
                        # not counted toward the target.
                        status = CandidateStatus.below_threshold
                        error = f"outside the brief: {failure.detail}"
                        outcome = error
                    elif judgement.fit(score) < self.min_score:
                        # Ingested (it was paid for), but not a result: no stranger fills a place
                        # (the floor is on the fit to the whole brief, as for internal hits).
                        status = CandidateStatus.below_threshold
                        fit = judgement.fit(score)
                        error = f"score {fit:.3f} is below the relevance floor {self.min_score:.2f}"
                        outcome = error
                    else:
                        appended = await repo.append_result(
                            conn,
                            search_id=stub.search_id,
                            candidate_id=candidate_id,
                            search_candidate_id=stub.id,
                            tier=stub.tier,
                            score=judgement.fit(score),
                            role_score=score,
                            judgement=judgement,
                        )
                        status, error = CandidateStatus.succeeded, None
                        if appended:
                            facts = await headline.appended_result_facts(
                                conn, stub.search_id, appended.rank
                            )
                        outcome = (
                            f"rank {appended.rank} (score {appended.score:.3f})"
                            if appended
                            else "already in the results"
                        )
                    await repo.finish_candidate(
                        conn, stub.id, status, candidate_id=candidate_id, error=error
                    )
                    await repo.touch_search(conn, stub.search_id)
                if not await batch.finish(conn, {stub.id: DONE}):
                    raise _ClaimLost
        except _ClaimLost:
            log.warning(
                "search %s candidate %d: claim lost before commit; result dropped",
                stub.search_id,
                stub.id,
            )
            return GIVE_BACK
        except (psycopg.errors.IntegrityError, psycopg.errors.DataError) as exc:
            # Something in this profile the schema refuses: this candidate's failure, not the
            # worker's (raising would re-queue it forever).
            # diag.message_primary, not str(exc): the DETAIL line quotes the whole row, e-mail
            # address included, and last_error is shown and logged.
            reason = exc.diag.message_primary or type(exc).__name__
            return await self._fail(
                batch, stub, CandidateStatus.failed_permanent, f"cannot ingest: {reason}"
            )
        headline.observe_committed(facts)
        log.info("search %s candidate %d (%s): %s", stub.search_id, stub.id, stub.tier, outcome)
        async with self.pool.connection() as conn, conn.transaction():
            await repo.complete_search_if_done(conn, stub.search_id)
        return DONE

    async def _fail(
        self, batch: Batch[ClaimedStub], stub: ClaimedStub, status: CandidateStatus, error: str
    ) -> Outcome:
        error = error_text(error)
        try:
            async with self.pool.connection() as conn, conn.transaction():
                await repo.lock_search(conn, stub.search_id)
                if await repo.finish_candidate(conn, stub.id, status, error=error):
                    await repo.touch_search(conn, stub.search_id)
                if not await batch.finish(conn, {stub.id: DONE}):
                    raise _ClaimLost
        except _ClaimLost:
            log.info(
                "search %s candidate %d: claim lost; %s dropped",
                stub.search_id,
                stub.id,
                status.value,
            )
            return GIVE_BACK
        log.info("search %s candidate %d: %s: %s", stub.search_id, stub.id, status.value, error)
        # The external id is often a person's name (a LinkedIn slug): debug level only.
        log.debug("search %s candidate %d is %s", stub.search_id, stub.id, stub.external_id)
        async with self.pool.connection() as conn, conn.transaction():
            await repo.complete_search_if_done(conn, stub.search_id)
        return DONE


class _ClaimLost(Exception):
    """Roll the candidate's transaction back: its lease is no longer this worker's."""
