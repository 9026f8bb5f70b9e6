"""Field mapping of every job source adapter, on the vendors' documented shapes (no database)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from protego import Protego

from shortlist.errors import BadInput
from shortlist.listings import jobpost
from shortlist.listings.sources import ashby, careers, greenhouse, lever, mapping
from shortlist.listings.sources.fetch import Fetched, user_agent
from shortlist.listings.sources.models import SourceSpec
from shortlist.listings.sources.sync import canonical_url
from shortlist.public_address import is_public
from tests.job_boards import ashby_job, greenhouse_job, job_posting_page, lever_posting


def test_specs_parse_and_refuse() -> None:
    assert SourceSpec.parse("greenhouse:vaulttec") == SourceSpec("greenhouse", "vaulttec")
    assert SourceSpec.parse(" Lever:leverdemo ").spec == "lever:leverdemo"
    assert SourceSpec.parse("ashby:Ashby").kind == "ashby"
    assert SourceSpec.parse("https://example.com/careers").kind == "careers"
    for bad in ("greenhouse:", "greenhouse:a/b", "ftp://example.com/", "file:///etc/passwd", "x"):
        with pytest.raises(BadInput):
            SourceSpec.parse(bad)


def test_lever_job_sites_parse_as_their_instance() -> None:
    # Lever's README: "the instances we support: global (default) and EU", each with its own
    # job site (jobs.lever.co/SITE, jobs.eu.lever.co/SITE) and API host.
    eu = SourceSpec.parse(" https://Jobs.EU.Lever.co/leverdemo/?team=Platform#top ")
    assert eu == SourceSpec("lever", "leverdemo", "eu")
    assert eu.spec == "https://jobs.eu.lever.co/leverdemo"
    assert SourceSpec.parse(eu.spec) == eu  # the stored spec reads back as itself
    assert SourceSpec.parse("http://jobs.lever.co/leverdemo") == SourceSpec("lever", "leverdemo")
    assert SourceSpec.parse("https://jobs.lever.co/leverdemo").spec == "lever:leverdemo"
    assert SourceSpec.parse("lever:leverdemo").instance == "global"
    # A posting's page, another host or port, or no site: a careers page as before.
    for page in (
        "https://jobs.eu.lever.co/leverdemo/5ac21346-8e0c-4494-8e7a-3eb92ff77902",
        "https://jobs.eu.lever.co/",
        "https://jobs.eu.lever.co:8443/leverdemo",
        "https://careers.lever.co/leverdemo",
        "https://jobs.eu.lever.co/le%20ver",
    ):
        assert SourceSpec.parse(page) == SourceSpec("careers", page), page


def test_greenhouse_job_maps_escaped_content_to_plain_text() -> None:
    job = greenhouse_job(127817, "Vault Designer", "NYC", "")
    # As the jobs list sends it with content=true: the HTML itself entity-escaped.
    job["content"] = (
        "&lt;p&gt;Design &amp;amp; build &lt;strong&gt;vaults&lt;/strong&gt;.&lt;/p&gt;"
    )
    posting = greenhouse.map_job(job)
    assert posting is not None
    assert posting.external_id == "127817"
    assert posting.job_title == "Vault Designer"
    assert posting.city_location == "NYC"
    assert posting.description == "Design & build vaults."
    assert posting.source_url == "https://boards.greenhouse.io/vaulttec/jobs/127817"
    assert greenhouse.map_job({"id": 1}) is None
    # A prospect post (internal_job_id null, Job Board API "List jobs") is no job.
    assert greenhouse.map_job({**job, "internal_job_id": None}) is None


def test_greenhouse_board_without_jobs_list_is_transient() -> None:
    from shortlist.errors import TransientError

    with pytest.raises(TransientError):
        greenhouse.parse_jobs(Fetched("http://x/", 200, b'{"error": 1}'), "acme")


def test_lever_posting_maps_salary_range_workplace_and_epoch_ms() -> None:
    posting = lever.map_posting(
        lever_posting(
            "abc-123",
            "Backend Engineer",
            workplaceType="remote",
            salaryRange={
                "currency": "usd",
                "interval": "per-month-salary",
                "min": 10000,
                "max": 12000,
            },
        )
    )
    assert posting is not None
    assert posting.work_mode == "remote"
    assert (posting.salary_min_ks, posting.salary_max_ks, posting.currency_code) == (
        120,
        144,
        "USD",
    )
    assert posting.posted_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert posting.city_location == "San Francisco"
    assert "Build the thing." in posting.description
    assert "Requirements\nPython\nSQL" in posting.description
    assert "Benefits & more." in posting.description
    assert posting.source_url == "https://jobs.lever.co/leverdemo/abc-123"
    hourly = lever.map_posting(
        lever_posting(
            "h",
            "Barista",
            salaryRange={"currency": "USD", "interval": "per-hour-wage", "min": 20, "max": 25},
        )
    )
    assert hourly is not None and (hourly.salary_min_ks, hourly.salary_max_ks) == (42, 52)
    assert lever.map_posting(lever_posting("o", "X", workplaceType="on-site")).work_mode == "onsite"  # type: ignore[union-attr]


def test_ashby_job_maps_compensation_address_and_workplace() -> None:
    posting = ashby.map_job(ashby_job("9f1b", "Platform Engineer"))
    assert posting is not None
    assert posting.city_location == "Berlin"
    assert posting.work_mode == "hybrid"
    assert (posting.salary_min_ks, posting.salary_max_ks, posting.currency_code) == (70, 90, "EUR")
    assert posting.description == "Run the platform."
    assert posting.source_url == "https://jobs.ashbyhq.com/ashbydemo/9f1b"
    assert ashby.map_job(ashby_job("u", "Hidden", isListed=False)) is None
    remote = ashby.map_job(ashby_job("r", "Anywhere", workplaceType=None, isRemote=True))
    assert remote is not None and remote.work_mode == "remote"


@pytest.mark.parametrize("shown", [False, None, "true"])
def test_ashby_salary_only_where_the_organisation_displays_it(shown: object) -> None:
    # The API sends the figures whatever the organisation's "Display on Job Postings?"
    # setting; the job's shouldDisplayCompensationOnJobPostings says which it chose.
    job = ashby_job("h", "Quiet Pay", shouldDisplayCompensationOnJobPostings=shown)
    if shown is None:
        del job["shouldDisplayCompensationOnJobPostings"]
    posting = ashby.map_job(job)
    assert posting is not None and posting.job_title == "Quiet Pay"
    assert (posting.salary_min_ks, posting.salary_max_ks, posting.currency_code) == (
        None,
        None,
        None,
    )


def test_json_ld_job_posting_fields() -> None:
    page = job_posting_page(
        "Software Engineer &amp; SRE",
        identifier={"@type": "PropertyValue", "name": "Google", "value": "1234567"},
        jobLocationType="TELECOMMUTE",
    )
    [posting] = careers.postings_of_page(page, "https://careers.example/jobs/1")
    assert posting.job_title == "Software Engineer & SRE"
    assert posting.external_id == "1234567"
    assert posting.company_name == "Google"
    assert posting.city_location == "Mountain View"
    assert posting.work_mode == "remote"
    # 40 USD an hour, 2080 hours a year.
    assert (posting.salary_min_ks, posting.salary_max_ks, posting.currency_code) == (83, 83, "USD")
    assert posting.description.startswith("Google aspires")
    assert "<" not in posting.description
    assert posting.valid_through == datetime(2099, 3, 18, tzinfo=UTC)
    assert posting.source_url == "https://careers.example/jobs/1"


def test_json_ld_graph_lists_and_ranges() -> None:
    graph = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "Organization", "name": "Acme"},
            {
                "@type": ["JobPosting"],
                "title": "Welder",
                "url": "/jobs/welder",
                "hiringOrganization": "Acme",
                "jobLocation": [{"@type": "Place", "address": "Leeds, UK"}],
                "baseSalary": {
                    "@type": "MonetaryAmount",
                    "currency": "GBP",
                    "value": {
                        "@type": "QuantitativeValue",
                        "minValue": 30000,
                        "maxValue": 36000,
                        "unitText": "YEAR",
                    },
                },
            },
        ],
    }
    page = f'<script type="application/ld+json">{json.dumps(graph)}</script>'
    [posting] = careers.postings_of_page(page, "https://acme.example/careers")
    assert posting.source_url == "https://acme.example/jobs/welder"
    assert posting.external_id == "https://acme.example/jobs/welder"
    assert (posting.company_name, posting.city_location) == ("Acme", "Leeds, UK")
    assert (posting.salary_min_ks, posting.salary_max_ks, posting.currency_code) == (30, 36, "GBP")
    assert careers.postings_of_page("<html><p>no data</p></html>", "https://x/") == []
    assert (
        careers.postings_of_page('<script type="application/ld+json">{bad</script>', "https://x/")
        == []
    )


def test_json_ld_job_posting_as_main_entity_of_its_page() -> None:
    """A careers page as a CMS with an SEO plug-in writes it: an @graph of the site, the page
    (whose mainEntity is the posting, written inline) and its breadcrumb; a second script
    names the same posting again by @id. schema.org/mainEntity: "the primary entity described
    in some page"."""
    page_url = "https://careers.acme.example/jobs/welder-leeds"
    job = {
        "@type": "schema:JobPosting",
        "@id": f"{page_url}#job",
        "title": "Welder",
        "identifier": {"@type": "PropertyValue", "name": "Acme", "value": "W-11"},
        "description": "<p>Weld &amp; fabricate.</p>",
        "datePosted": "2026-01-18",
        "validThrough": "2099-01-01",
        "hiringOrganization": {"@id": "https://acme.example/#org", "name": "Acme"},
        "jobLocation": {
            "@type": "Place",
            "address": {"@type": "PostalAddress", "addressLocality": "Leeds"},
        },
        "mainEntityOfPage": {"@id": page_url},
    }
    graph = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "Organization", "@id": "https://acme.example/#org", "name": "Acme"},
            {
                "@type": "WebSite",
                "@id": "https://acme.example/#site",
                "url": "https://acme.example/",
            },
            {
                "@type": ["WebPage", "ItemPage"],
                "@id": page_url,
                "url": page_url,
                "isPartOf": {"@id": "https://acme.example/#site"},
                "breadcrumb": {"@id": f"{page_url}#breadcrumb"},
                "mainEntity": job,
            },
            {
                "@type": "BreadcrumbList",
                "@id": f"{page_url}#breadcrumb",
                "itemListElement": [
                    {"@type": "ListItem", "position": 1, "name": "Jobs", "item": "/jobs"}
                ],
            },
        ],
    }
    again = {"@context": "https://schema.org", "@type": "ItemPage", "mainEntity": job}
    page = (
        "<html><head>"
        f'<script type="application/ld+json">{json.dumps(graph)}</script>'
        f'<script type="application/ld+json">{json.dumps(again)}</script>'
        "</head><body><h1>Welder</h1></body></html>"
    )
    [posting] = careers.postings_of_page(page, page_url)
    assert (posting.external_id, posting.job_title) == ("W-11", "Welder")
    assert (posting.company_name, posting.city_location) == ("Acme", "Leeds")
    assert posting.description == "Weld & fabricate."
    assert posting.source_url == page_url


def test_json_ld_postings_in_an_item_list_and_under_reverse() -> None:
    listing = {
        "@context": "https://schema.org",
        "@type": "ItemList",
        "itemListElement": [
            {"@type": "ListItem", "position": n, "item": {"@type": "JobPosting", "title": t}}
            for n, t in enumerate(("Cook", "Baker"), 1)
        ],
    }
    reverse = {
        "@context": "https://schema.org",
        "@type": "Organization",
        "name": "Bakery",
        "@reverse": {"hiringOrganization": [{"@type": "JobPosting", "title": "Pastry Chef"}]},
    }
    page = "".join(
        f'<script type="application/ld+json">{json.dumps(d)}</script>' for d in (listing, reverse)
    )
    titles = [p.job_title for p in careers.postings_of_page(page, "https://bakery.example/")]
    assert titles == ["Cook", "Baker", "Pastry Chef"]


def test_json_ld_walk_is_bounded_on_hostile_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    posting = {"@type": "JobPosting", "title": "Deep"}
    nested: object = posting
    for _ in range(careers.MAX_JSONLD_DEPTH - 1):
        nested = {"@type": "WebPage", "mainEntity": nested}
    assert [n["title"] for n in careers.job_posting_nodes([nested])] == ["Deep"]
    assert careers.job_posting_nodes([{"@type": "WebPage", "mainEntity": nested}]) == []
    # JSON nested past the parser's recursion limit: no postings, no exception.
    bomb = "[" * 100_000 + "]" * 100_000
    assert (
        careers.postings_of_page(
            f'<script type="application/ld+json">{bomb}</script>', "https://x/"
        )
        == []
    )
    # A page of many objects: the walk stops after MAX_JSONLD_NODES of them.
    monkeypatch.setattr(careers, "MAX_JSONLD_NODES", 50)
    wide = [{"@type": "Thing", "n": i} for i in range(100)] + [posting]
    assert careers.job_posting_nodes(wide) == []
    assert careers.job_posting_nodes([posting, *wide]) == [posting]


def test_sitemaps_and_job_links() -> None:
    urlset = (
        b'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/'
        b'sitemap/0.9"><url><loc>https://a.example/jobs/1</loc></url><url><loc>'
        b"https://a.example/jobs/2</loc></url></urlset>"
    )
    assert careers.sitemap_locations(urlset) == (
        "urlset",
        ["https://a.example/jobs/1", "https://a.example/jobs/2"],
    )
    index = b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>https://a.example/s1.xml</loc></sitemap></sitemapindex>'
    assert careers.sitemap_locations(index) == ("sitemapindex", ["https://a.example/s1.xml"])
    assert careers.sitemap_locations(b"<html><body>hi</body></html>") is None
    # An entity bomb or external entity is not expanded.
    xxe = b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]><urlset><url><loc>&x;</loc></url></urlset>'
    found = careers.sitemap_locations(xxe)
    assert found is None or all("root:" not in loc for loc in found[1])
    page = (
        '<a href="/careers/jobs/1">One</a><a href="/careers/jobs/1#apply">again</a>'
        '<a href="/about">About</a><a href="https://other.example/careers/jobs/9">x</a>'
        '<a href="/open-positions/7">Seven</a>'
    )
    assert careers.job_links(page, "https://a.example/careers") == [
        "https://a.example/careers/jobs/1",
        "https://a.example/open-positions/7",
    ]


def test_mapping_helpers() -> None:
    assert mapping.plain_text("<p>a &amp; b</p><p>c</p>") == "a & b\n\nc"
    assert mapping.plain_text("plain") == "plain"
    assert jobpost.yearly_ks("120,000") == 120
    assert jobpost.yearly_ks(True) is None and jobpost.yearly_ks(-5) is None
    assert jobpost.yearly_ks(10**12) is None
    assert jobpost.period_of("1 MONTH") == 12 and jobpost.period_of(None) == 1
    assert jobpost.yearly_ks(100) is None  # rounds to no thousands: no salary, not 0
    # Each vendor's period names (Lever intervals, Ashby "N UNIT", schema.org unitText).
    for unit, per_year in {
        "bi-week-salary": 26,
        "semi-month-salary": 24,
        "bi-month-salary": 6,
        "per-day-wage": 260,
        "2 WEEK": 26,
        "0.5 MONTH": 24,
        "HOUR": 2080,
    }.items():
        assert jobpost.period_of(unit) == per_year, unit
        assert jobpost.yearly_ks(3000, jobpost.period_of(unit)) == round(3 * per_year), unit
    for one_off in ("one-time", "NONE", "1 TIME", "fortnightly-ish"):
        assert jobpost.period_of(one_off) is None, one_off
        assert jobpost.salary_pair(1000, 2000, jobpost.period_of(one_off)) == (None, None)
    assert mapping.timestamp("2026-01-18") == datetime(2026, 1, 18, tzinfo=UTC)
    assert mapping.timestamp("2026-01-18", end_of_day=True) == datetime(
        2026, 1, 18, 23, 59, 59, 999999, tzinfo=UTC
    )
    assert mapping.timestamp("not a date") is None


def test_canonical_url_and_addresses() -> None:
    assert canonical_url("HTTPS://Acme.Example/jobs/1/?utm_source=x&gh_jid=1#top") == (
        "https://acme.example/jobs/1?gh_jid=1"
    )
    assert canonical_url("mailto:x@example.com") is None
    for private in ("127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "::ffff:192.168.1.1"):
        assert not is_public(private)
    assert is_public("93.184.216.34")
    assert "shortlist/" in user_agent("https://ops.example/contact")
    assert "https://ops.example/contact" in user_agent("https://ops.example/contact")


def test_robots_rules_as_protego_reads_them() -> None:
    robots = Protego.parse("User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n")
    assert not robots.can_fetch("https://a.example/private/job", "shortlist")
    assert robots.can_fetch("https://a.example/jobs/1", "shortlist")
    assert robots.crawl_delay("shortlist") == 2
