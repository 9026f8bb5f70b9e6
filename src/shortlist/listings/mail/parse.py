"""Free-form job posts by e-mail: what an employer's message says, without a template.

Two steps, split by where they may run:

* :func:`read_message` (raw bytes → :class:`Reading`) does everything hostile input can make
  slow — MIME, header decoding, HTML, PDF and DOCX attachments, quoted replies, every pattern
  over the text. It runs in a parser process with a hard time limit
  (:mod:`shortlist.listings.mail.sandbox`), never on a server's event loop.
* :func:`shortlist.listings.mail.listing.to_listing` (a ``Reading`` → ``ListingCreate``), in
  the server, resolves the city with the gazetteer and applies the company.

What a job post's text says (title, pay, work mode, place) is read by
:mod:`shortlist.listings.jobpost`, which the crawler shares; this module is the MIME reader
around it.

Safety: the stdlib parser's known slow paths are its structured-header parsing (a 160 KB folded
``From:`` took 50 s under ``policy.default``) and deeply nested multiparts. So the structure is
read with ``policy.compat32`` (headers stay raw strings: nothing is parsed on access), sizes and
counts are bounded before anything is parsed, and only the few headers we need are decoded, by
``policy.default``'s header registry, after their length is checked. Text is cut to bounded lines
before any pattern runs, and every pattern here is linear (no nested unbounded repetition). A
message that holds no job raises :class:`NoJob` with the reason the sender reads.

Nothing here logs: a message carries personal data.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import io
import re
import warnings
import zipfile
from dataclasses import dataclass, field
from email.message import Message

from shortlist.errors import BadInput
from shortlist.listings import jobpost
from shortlist.listings.jobpost import Salary, clean_title, find_work_mode
from shortlist.listings.mail import screen
from shortlist.listings.mail.screen import RejectedAs
from shortlist.listings.models import MAX_DESCRIPTION, MAX_TITLE, WorkMode

# --- bounds ---------------------------------------------------------------------------------

MAX_HEADER_BLOCK = 64 * 1024
"""Bytes of a message's (or part's) header block."""
MAX_HEADER_FIELD = 8 * 1024
"""Bytes of one header field, folded lines included."""
MAX_HEADER_FIELDS = 300
MAX_DECODED_HEADER = 2000
"""Characters of a header we decode (From, Subject, …): longer ones are refused or cut."""
MAX_PARTS = 60
MAX_MULTIPARTS = 20
MAX_TEXT = 200_000
"""Characters of text read from one part (an HTML body, a PDF)."""
MAX_LINES = 4000
MAX_LINE = 1000
"""Characters of one line: longer lines are wrapped before any pattern runs."""
MAX_HTML = 2_000_000
MAX_ATTACHMENT = 5_000_000
MAX_PDF_PAGES = 20
MAX_DOCX_UNPACKED = 4 * MAX_ATTACHMENT
"""A DOCX is a zip: the sizes its directory declares, all parts together, at most this.
zipfile never inflates a member past its declared size (a longer stream is an error), so a
5 MB zip bomb that would inflate to gigabytes is skipped unread. Pictures, the bulk of a real
DOCX, are stored compressed: a real one unpacks to little more than its own size."""
MAX_PLACE_HINT = 200

# --- the reading ------------------------------------------------------------------------------

NOT_A_JOB = (
    "the message does not describe a job: no role, job wording or salary was found in its"
    " subject, text or attachments"
)


class NoJob(BadInput):
    """The message holds no job post we can publish; the text says why (the sender reads it),
    ``kind`` what it is instead (:data:`screen.RejectedAs`, stored as
    ``inbound_mail.rejected_as``)."""

    def __init__(self, message: str, kind: RejectedAs = "not_a_job_post") -> None:
        super().__init__(message, field="body", extra={"rejected_as": kind})
        self.kind: RejectedAs = kind


@dataclass
class Reading:
    """What :func:`read_message` found; plain data, sent back from the parser process."""

    title: str
    description: str
    subject: str = ""
    company: str | None = None
    """Named by the message in a "Company:" line; a bound company overrides it."""
    sender_company: str | None = None
    """The sender's domain or name, the last resort for an unbound message."""
    place_hints: list[str] = field(default_factory=list)
    """Where the city may be named, most explicit first, each at most 200 characters."""
    text_head: str = ""
    """The start of the description (2,000 characters), for a city named in passing."""
    work_mode: WorkMode | None = None
    salary: Salary | None = None
    message_id: str | None = None
    automatic: bool = False
    """Automatic mail by its headers (never answered). Whom an answer goes to is not the
    parser's to say: the server takes the authenticated From (``mail.authentication``)."""
    addresses: list[str] = field(default_factory=list)
    """Every address of its From and Reply-To (and a forwarded message's From), lower-case: a
    forgotten person among them is neither answered nor kept (shortlist.privacy)."""
    language: str = "en"
    apply_url: str | None = None
    """A link of the message that reads as the application (shortlist.listings.mail.parse,
    :func:`apply_link`)."""
    apply_email: str | None = None
    """An address the message asks applications to be sent to; else, when it invites a
    reply, its reply address."""
    signals: int = 1
    """How much the message reads like a job post (job words, salary, labelled lines); 0: it
    does not, and a missing title or city means there is no job in it at all."""


# --- patterns (all linear: bounded repetition, one way to match each character) -------------

_MULTIPART = re.compile(rb"(?im)^content-type:[ \t]*multipart/")
_CONTENT_TYPE = re.compile(rb"(?im)^content-type:")

_PREFIX = re.compile(
    r"^(?:(?:re|aw|fwd?|wg|tr|sv|vs|antw)\s?:\s?|\[[^\]]{0,40}\]\s?)+", re.IGNORECASE
)
_SUBJECT_LABEL = re.compile(
    r"^(?:new\s)?(?:job\s(?:post(?:ing)?|opening|offer|ad)|vacancy|opening|position|role|hiring"
    r"|we(?:'|’)?re\shiring|we\sare\shiring|now\shiring|stellenanzeige|stellenangebot"
    r"|neue\sstelle|jobangebot|ausschreibung|wir\ssuchen)\s?[:\-–—]\s?",
    re.IGNORECASE,
)
_GENERIC_SUBJECTS = frozenset({
    "job post", "job posting", "new job", "job opening", "new opening", "vacancy", "opening",
    "new position", "new role", "hiring", "we're hiring", "we are hiring", "job ad",
    "stellenanzeige", "stellenangebot", "neue stelle", "jobangebot", "job", "jobs", "post",
    "please post", "job offer", "ausschreibung", "",
})  # fmt: skip
# " — ", " – ", " - ", " | ", " · ": the parts of a subject line.
_TITLE_LABEL = re.compile(
    r"^\s{0,8}(?:[*•-]\s?)?(?:job\stitle|title|role|position|stelle|jobtitel|stellenbezeichnung"
    r"|rolle|vacancy|opening)\s?[:：]\s?(?P<v>\S.{0,299})$",
    re.IGNORECASE,
)
_HIRING = re.compile(
    r"\b(?:we(?:'|’)?re|we\sare|are\scurrently|is|are)\s(?:hiring|looking\sfor|seeking|recruiting)"
    r"\s(?:an?\s|our\s(?:next|first|new)\s)?(?P<en>[^.!?\n]{3,120})"
    r"|\bwir\ssuchen\s(?:ab\ssofort\s|zum\snächstmöglichen\szeitpunkt\s)?(?:eine?n?\s)?"
    r"(?P<de>[^.!?\n]{3,120})",
    re.IGNORECASE,
)
# Where a title written in a sentence ends: "a Senior Data Engineer to join our team in Lisbon".
_TITLE_END = re.compile(
    r"\s(?:to|who|for|with|in|at|based|at\sour|for\sour|zur|zum|für|in|mit|bei|am|ab|der|die|das"
    r"|which|that|on)\s|[,;:(]",
    re.IGNORECASE,
)
_LOCATION_LABEL = re.compile(
    r"^\s{0,8}(?:[*•-]\s?)?(?:location|city|office|based\sin|place\sof\swork|work\slocation"
    r"|standort|arbeitsort|einsatzort|dienstort|ort)\s?[:：]\s?(?P<v>\S.{0,199})$",
    re.IGNORECASE,
)
_CURRENCY_LABEL = re.compile(r"^\s{0,8}(?:currency|währung)\s?[:：]\s?(?P<v>[A-Za-z]{3})\s?$", re.I)
_COMPANY_LABEL = re.compile(
    r"^\s{0,8}(?:[*•-]\s?)?(?:company|employer|unternehmen|firma|arbeitgeber)\s?[:：]\s?"
    r"(?P<v>\S.{0,199})$",
    re.IGNORECASE,
)

_GERMAN = re.compile(
    r"\b(?:und|wir|sie|ihr|für|mit|der|die|das|eine?n?|stelle|suchen|bei|uns|nicht|oder)\b",
    re.IGNORECASE,
)
_ENGLISH = re.compile(r"\b(?:and|we|you|your|the|for|with|our|role|are|to|of|in)\b", re.I)
_FORWARD_MARK = re.compile(
    r"^\s{0,8}(?:-{2,20}\s?(?:forwarded\smessage|original\smessage|weitergeleitete\snachricht"
    r"|ursprüngliche\snachricht)\s?-{0,20}|begin\sforwarded\smessage:|anfang\sder"
    r"\sweitergeleiteten\snachricht:)\s{0,8}$",
    re.IGNORECASE,
)
_QUOTED_HEADER = re.compile(
    r"^\s{0,8}[*>]{0,2}\s?(?P<k>from|von|sent|gesendet|date|datum|to|an|cc|subject|betreff)\s?:"
    r"\s?[*]{0,2}\s?(?P<v>.{0,500})$",
    re.IGNORECASE,
)
_AUTO_SUBMITTED = re.compile(r"^\s*no\s*$", re.IGNORECASE)
_FREEMAIL = frozenset({
    "gmail", "googlemail", "yahoo", "ymail", "hotmail", "outlook", "live", "msn", "icloud",
    "me", "mac", "aol", "proton", "protonmail", "pm", "gmx", "web", "mail", "yandex", "zoho",
    "fastmail", "hey", "tutanota", "qq", "163", "t-online", "freenet",
})  # fmt: skip
_SENDER_NOISE = re.compile(
    r"^(?:jobs|careers|hiring|recruiting|recruitment|talent|hr|people|team)\s(?:at|@|bei|von)\s"
    r"|\s(?:jobs|careers|hiring|recruiting|recruitment|talent(?:\sacquisition)?|hr|people"
    r"|team|karriere)$",
    re.IGNORECASE,
)


# --- the message's structure --------------------------------------------------------------------


_FIELD_NAME = re.compile(r"[A-Za-z0-9-]{1,40}")


def _check_header_block(block: bytes, where: str) -> None:
    """A header block's size, field count and field sizes, before any parser sees it."""
    if len(block) > MAX_HEADER_BLOCK:
        raise BadInput(f"the {where} header is larger than {MAX_HEADER_BLOCK // 1024} KB")
    fields = 0
    size = 0
    name = b""
    for line in block.splitlines():
        if line[:1] in (b" ", b"\t"):
            size += len(line)
        else:
            fields += 1
            size = len(line)
            name = line.partition(b":")[0][:40]
        if size > MAX_HEADER_FIELD:
            # The reason is kept with the message after its personal data is erased: it
            # quotes a field's name, never a line that is not one (it may hold an address).
            shown = name.decode("ascii", "replace")
            what = f"field {shown!r}" if _FIELD_NAME.fullmatch(shown) else "line"
            raise BadInput(f"the {where} header {what} is longer than {MAX_HEADER_FIELD} bytes")
    if fields > MAX_HEADER_FIELDS:
        raise BadInput(f"the {where} header has more than {MAX_HEADER_FIELDS} fields")


def _header_end(raw: bytes) -> int:
    ends = [i for i in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if i >= 0]
    return min(ends) if ends else len(raw)


def check_raw(raw: bytes, max_bytes: int) -> None:
    """Bounds checked on the bytes, before parsing (cheap: a few linear scans)."""
    if not raw.strip():
        raise BadInput("the message is empty", field="body")
    if len(raw) > max_bytes:
        raise BadInput(f"the message is larger than {max_bytes} bytes", field="body")
    _check_header_block(raw[: _header_end(raw)], "message")
    # The parser walks nested multiparts recursively; a job post needs a handful of parts.
    if len(_MULTIPART.findall(raw)) > MAX_MULTIPARTS:
        raise BadInput(f"the message nests more than {MAX_MULTIPARTS} multipart parts")
    if len(_CONTENT_TYPE.findall(raw)) > MAX_PARTS:
        raise BadInput(f"the message has more than {MAX_PARTS} parts")


def _raw_header(msg: Message, name: str) -> str | None:
    """A header's raw value (compat32 keeps it as read; 8-bit bytes, which senders do put in
    headers, read as UTF-8)."""
    for key, value in msg.raw_items():
        if key.lower() == name:
            text = str(value)
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return None


def _decoded_header(msg: Message, name: str) -> str:
    """One header decoded (RFC 2047) by ``policy.default``'s registry, after its length is
    bounded; an undecodable one reads as empty."""
    text = _raw_header(msg, name)
    if text is None:
        return ""
    if len(text) > MAX_DECODED_HEADER:
        text = text[:MAX_DECODED_HEADER]
    try:
        return " ".join(str(email.policy.default.header_factory(name, text)).split())
    except Exception:  # the registry raises many types on malformed input; empty is the answer
        return " ".join(text.split())


def _addresses(msg: Message, name: str) -> list[tuple[str, str]]:
    """(display name, address) pairs of an address header, bounded as above."""
    text = _raw_header(msg, name)
    if text is None:
        return []
    if len(text) > MAX_DECODED_HEADER:
        raise BadInput(f"the {name} header is longer than {MAX_DECODED_HEADER} characters")
    try:
        header = email.policy.default.header_factory(name, " ".join(text.split()))
        return [
            (a.display_name or "", a.addr_spec or "") for a in getattr(header, "addresses", ())[:10]
        ]
    except Exception:  # malformed: as if absent
        return []


def _payload_text(part: Message, limit: int = MAX_TEXT) -> str:
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return ""
    content_type = str(part.get("content-type", ""))
    charset = "utf-8"
    if len(content_type) <= MAX_DECODED_HEADER:
        charset = part.get_content_charset() or "utf-8"
    try:
        text = data[: limit * 4].decode(charset, errors="replace")
    except LookupError:
        text = data[: limit * 4].decode("utf-8", errors="replace")
    return text[:limit]


_URL = re.compile(r"https?://[^\s<>\"')\]]{1,2000}", re.I)
_MAIL_ADDRESS = re.compile(r"(?:mailto:)?([\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8})")
_APPLY_WORDS = re.compile(
    r"appl(?:y|ication|icants?)|bewerb|candidat|\bcareers?\b|karriere|/jobs?/|stellen|recruit",
    re.I,
)
_SEND_TO = re.compile(
    r"(?:appl(?:y|ications?)|send|e-?mail|submit|forward|cv|resume|résumé|bewerb\w*|"
    r"Unterlagen|Lebenslauf)[^\n@]{0,80}$",
    re.I,
)
_REPLY_INVITED = re.compile(
    r"reply (?:to )?(?:this|the) (?:e-?mail|message)|apply by (?:e-?mail|replying)|"
    r"(?:respond|reply) with your (?:cv|resume)|antworten Sie (?:einfach )?auf diese|"
    r"per E-?Mail bewerben|Bewerbung per (?:E-?Mail|Antwort)",
    re.I,
)


def html_links(html: str) -> list[tuple[str, str]]:
    """Each link of an HTML body (its href and its text), in order."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html[:MAX_HTML])
    return [
        (str(node.attributes.get("href") or "").strip(), (node.text() or "").strip()[:200])
        for node in tree.css("a[href]")
    ][:500]


def text_links(text: str) -> list[tuple[str, str]]:
    """Each URL of a plain text, with its line as its text."""
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        for match in _URL.finditer(line):
            found.append((match.group(0).rstrip(".,;:"), line[:200]))
            if len(found) >= 500:
                return found
    return found


def apply_link(links: list[tuple[str, str]]) -> str | None:
    """The first http(s) link whose address or text reads as the application ("Apply here",
    ``…/careers/123``, "Jetzt bewerben")."""
    for url, text in links:
        if url.lower().startswith(("http://", "https://")) and (
            _APPLY_WORDS.search(url) or _APPLY_WORDS.search(text)
        ):
            return url[:2000]
    return None


def apply_address(text: str, links: list[tuple[str, str]], reply_to: str | None) -> str | None:
    """Where applications go by e-mail: a mailto link, or an address right after words asking
    for them ("send your CV to jobs@acme.example", "Bewerbungen an …"); else the reply address
    when the message invites a reply ("apply by replying to this e-mail")."""
    for url, _text in links:
        if url.lower().startswith("mailto:"):
            address = url[7:].partition("?")[0].strip()
            if "@" in address:
                return address[:320]
    for line in text.splitlines()[:2000]:
        for match in _MAIL_ADDRESS.finditer(line):
            if _SEND_TO.search(line[: match.start()]):
                return match.group(1)[:320]
    if reply_to and _REPLY_INVITED.search(text[:20_000]):
        return reply_to[:320]
    return None


def html_to_text(html: str) -> str:
    """Visible text of an HTML body, a line per block; scripts, styles and heads dropped.

    selectolax (the Lexbor HTML5 parser, C): linear, and it never raises on malformed markup
    (the stdlib's HTMLParser took 11 s on ``<a`` x 40,000 and raised on ``<![<![``).
    Docs: https://selectolax.readthedocs.io/en/latest/lexbor.html
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html[:MAX_HTML])
    for node in tree.css("script, style, head, noscript, template, title"):
        node.decompose()
    for node in tree.css(
        "p, div, br, li, tr, h1, h2, h3, h4, h5, h6, ul, ol, table, blockquote, section,"
        " article, header, footer, hr"
    ):
        node.insert_after("\n")
    root = tree.body or tree.root
    text = root.text(separator="") if root is not None else ""
    return (text or "")[:MAX_TEXT]


def _pdf_text(data: bytes) -> str:
    """pypdf: https://pypdf.readthedocs.io/en/stable/user/extract-text.html"""
    from pypdf import PdfReader

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = PdfReader(io.BytesIO(data))
        out: list[str] = []
        size = 0
        for page in reader.pages[:MAX_PDF_PAGES]:
            text = page.extract_text() or ""
            out.append(text)
            size += len(text)
            if size > MAX_TEXT:
                break
    return "\n".join(out)[:MAX_TEXT]


def _docx_text(data: bytes) -> str:
    """python-docx: https://python-docx.readthedocs.io/en/latest/user/documents.html"""
    import docx

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        unpacked = sum(member.file_size for member in archive.infolist())
    if unpacked > MAX_DOCX_UNPACKED:
        raise ValueError(f"the DOCX unpacks to {unpacked} bytes")
    document = docx.Document(io.BytesIO(data))
    lines = [p.text for p in document.paragraphs]
    for table in document.tables[:20]:
        for row in table.rows[:200]:
            lines.append(" | ".join(c.text for c in row.cells[:20]))
    return "\n".join(lines)[:MAX_TEXT]


_PDF_TYPES = {"application/pdf", "application/x-pdf"}
_DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _attachment_text(part: Message) -> str:
    content_type = part.get_content_type()
    name = (
        (part.get_filename() or "").lower()
        if len(str(part.get("content-disposition", ""))) < 2000
        else ""
    )
    is_pdf = content_type in _PDF_TYPES or name.endswith(".pdf")
    is_docx = content_type == _DOCX_TYPE or name.endswith(".docx")
    if not (is_pdf or is_docx):
        return ""
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes) or not data or len(data) > MAX_ATTACHMENT:
        return ""
    try:
        return _pdf_text(data) if is_pdf else _docx_text(data)
    except Exception:  # a broken or hostile document holds no description we can read
        return ""


@dataclass
class _Parts:
    plain: list[str] = field(default_factory=list)
    html: list[str] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)
    inner_subjects: list[str] = field(default_factory=list)


def _walk(msg: Message) -> _Parts:
    parts = _Parts()
    for n, part in enumerate(msg.walk()):
        if n > MAX_PARTS:
            break
        if len(str(part.get("content-type", ""))) > MAX_DECODED_HEADER:
            continue  # a part whose type cannot be read safely is skipped
        if part.is_multipart():
            if part.get_content_type() == "message/rfc822":
                payload = part.get_payload()
                for inner in payload[:1] if isinstance(payload, list) else []:
                    if isinstance(inner, Message):
                        parts.inner_subjects.append(_decoded_header(inner, "subject"))
            continue
        disposition = str(part.get("content-disposition", "")).lower()[:200]
        content_type = part.get_content_type()
        if content_type == "text/plain" and "attachment" not in disposition:
            parts.plain.append(_payload_text(part))
        elif content_type == "text/html" and "attachment" not in disposition:
            parts.html.append(_payload_text(part, MAX_HTML))
        else:
            text = _attachment_text(part)
            if text.strip():
                parts.attachments.append(text)
    return parts


# --- text -------------------------------------------------------------------------------------


def bounded_lines(text: str) -> list[str]:
    """Lines of at most MAX_LINE characters (longer ones wrapped), at most MAX_LINES of them,
    whitespace runs collapsed: what every pattern below runs on."""
    out: list[str] = []
    for raw_line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = " ".join(raw_line.replace("\u00a0", " ").split())
        while len(line) > MAX_LINE:
            cut = line.rfind(" ", 0, MAX_LINE)
            cut = cut if cut > MAX_LINE // 2 else MAX_LINE
            out.append(line[:cut])
            line = line[cut:].lstrip()
        out.append(line)
        if len(out) >= MAX_LINES:
            break
    return out[:MAX_LINES]


def _squeeze(lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    return re.sub(r"\n{3,}", "\n\n", text)


@dataclass
class _Fragment:
    body: str
    headers: str


def _fragments(text: str, language: str) -> list[_Fragment]:
    """The message split at quoted replies and forwards, signatures dropped
    (mail-parser-reply: https://github.com/alfonsrv/mail-parser-reply)."""
    from mailparser_reply.parser import EmailMessage

    try:
        # keep_hyphen_lists: a job post's "- 5+ years of Python" lists are not signatures.
        parsed = EmailMessage(text=text, languages=["en", "de"], keep_hyphen_lists=True).read()
        fragments = [_Fragment(r.body or "", r.headers or "") for r in parsed.replies]
    except Exception:  # the library's patterns failing on odd text: read the text whole
        fragments = []
    return [f for f in fragments if f.body.strip()] or [_Fragment(text, "")]


_QUOTED_KEYS = {"betreff": "subject", "von": "from"}


def _strip_forward_headers(lines: list[str]) -> tuple[list[str], dict[str, str]]:
    """Forward markers and the quoted From/Date/Subject lines taken out; the forwarded
    Subject and From returned (the subject often is the job's title, the sender its company)."""
    out: list[str] = []
    quoted: dict[str, str] = {}
    in_headers = False
    for line in lines:
        if _FORWARD_MARK.match(line):
            in_headers = True
            continue
        m = _QUOTED_HEADER.match(line)
        if m and (in_headers or m.group("k").lower() in ("from", "von")):
            key = m.group("k").lower()
            quoted.setdefault(_QUOTED_KEYS.get(key, key), m.group("v").strip(" *"))
            in_headers = True
            continue
        if in_headers and not line.strip():
            in_headers = False
            continue
        in_headers = False
        out.append(line.lstrip("> ") if line.startswith(">") else line)
    return out, quoted


def _language(text: str) -> str:
    sample = text[:5000]
    return "de" if len(_GERMAN.findall(sample)) > len(_ENGLISH.findall(sample)) else "en"


# --- fields -------------------------------------------------------------------------------------


def _subject_title(subject: str) -> str | None:
    subject = _PREFIX.sub("", subject).strip()
    subject = _SUBJECT_LABEL.sub("", subject).strip()
    if subject.lower().strip(" !.:") in _GENERIC_SUBJECTS:
        return None
    title = clean_title(subject)
    return title or None


def _sentence_title(text: str) -> str | None:
    m = _HIRING.search(text[:5000])
    if not m:
        return None
    phrase = m.group("en") or m.group("de") or ""
    end = _TITLE_END.search(phrase)
    title = clean_title(phrase[: end.start()] if end else phrase)
    return title if 2 < len(title) <= 80 else None


def _first_label(lines: list[str], pattern: re.Pattern[str]) -> str | None:
    for line in lines:
        m = pattern.match(line)
        if m:
            return m.group("v").strip()
    return None


def sender_company(senders: list[tuple[str, str]]) -> str | None:
    """The company a sender stands for: "Jobs at Northwind" → "Northwind"; else the domain
    (jobs@acme-robotics.io → "Acme Robotics") unless it is a public mail service."""
    for display, addr in senders:
        labels = [lab for lab in addr.rpartition("@")[2].lower().split(".") if lab]
        if len(labels) >= 2:
            label = labels[-2]
            if label in ("co", "com", "org", "net", "ac") and len(labels) >= 3:
                label = labels[-3]
            if label not in _FREEMAIL:
                return " ".join(w.capitalize() for w in re.split(r"[-_]+", label) if w)[:200]
        # A public mail service: the display name, if it names a company ("Jobs at Northwind",
        # "Anna Schmidt | Lindwurm GmbH" → its last part).
        name = " ".join(display.split()).rpartition("|")[2]
        name = _SENDER_NOISE.sub("", name).strip(" \"'")
        if name and "@" not in name and _SENDER_NOISE.search(display):
            return name[:200]
    return None


def _is_automatic(msg: Message) -> bool:
    """Auto-replies, bounces and list mail (RFC 3834): never answered, so no mail loop."""
    auto = str(msg.get("auto-submitted", "no"))[:100]
    precedence = str(msg.get("precedence", ""))[:100].strip().lower()
    return (
        not _AUTO_SUBMITTED.match(auto)
        or precedence in ("bulk", "junk", "list", "auto_reply")
        or msg.get("list-id") is not None
    )


# --- the step in the parser process -------------------------------------------------------


def read_message(raw: bytes, max_bytes: int = 10_000_000) -> Reading:
    """What a message says as a job post; :class:`NoJob` (a ``BadInput``) says why not."""
    check_raw(raw, max_bytes)
    try:
        msg = email.message_from_bytes(raw, policy=email.policy.compat32)
        subject = _decoded_header(msg, "subject")
        senders = _addresses(msg, "from")
        reply_to = _addresses(msg, "reply-to") or senders
        parts = _walk(msg)
        automatic = screen.automatic(msg, subject, [a for _d, a in senders], raw)
    except RecursionError:
        raise BadInput("the message is nested too deeply to read") from None
    if automatic is not None:
        raise NoJob(f"automatic mail, never posted nor answered: {automatic}", "automatic")
    message_id = " ".join(str(msg.get("message-id", "")).split())[:998] or None

    if parts.plain and any(p.strip() for p in parts.plain):
        body = "\n\n".join(parts.plain)
    elif parts.html:
        body = "\n\n".join(html_to_text(h) for h in parts.html)
    else:
        body = ""
    attachment = "\n\n".join(parts.attachments)[:MAX_TEXT]
    language = _language(body + "\n" + attachment)

    best: tuple[int, list[str], dict[str, str]] = (-1, [], {})
    for fragment in _fragments(_squeeze(bounded_lines(body)), language):
        lines, quoted = _strip_forward_headers(bounded_lines(fragment.body))
        for line in bounded_lines(fragment.headers):
            m = _QUOTED_HEADER.match(line)
            if m:
                key = m.group("k").lower()
                quoted.setdefault(_QUOTED_KEYS.get(key, key), m.group("v").strip(" *"))
        score = jobpost.job_score("\n".join(lines))
        if score > best[0]:
            best = (score, lines, quoted)
    _score, body_lines, quoted = best
    forwarded_subject = quoted.get("subject")
    if "from" in quoted:
        senders = [email.utils.parseaddr(quoted["from"][:500]), *senders]
    attachment_lines = bounded_lines(attachment) if attachment else []
    all_lines = body_lines + attachment_lines

    if (
        jobpost.job_score("\n".join(body_lines)) < jobpost.job_score(attachment)
        and attachment_lines
    ):
        description = _squeeze(attachment_lines)
    else:
        description = _squeeze(all_lines)
    description = description[:MAX_DESCRIPTION].strip()

    subjects = [s for s in (subject, forwarded_subject, *parts.inner_subjects) if s]
    title = _first_label(all_lines, _TITLE_LABEL)
    title = clean_title(title) if title else None
    for candidate in subjects:
        if title:
            break
        title = _subject_title(candidate)
    title = title or _sentence_title(description)
    if not title and attachment_lines:
        first = next((ln for ln in attachment_lines if ln.strip()), "")
        title = clean_title(first) if len(first) <= 80 and not first.endswith(".") else None

    job_text = "\n".join([*subjects, description])
    labelled = sum(
        1
        for pattern in (_TITLE_LABEL, _LOCATION_LABEL, _COMPANY_LABEL)
        if _first_label(all_lines, pattern)
    )
    signals = jobpost.job_score(job_text) + labelled
    if not description or (not title and not signals):
        raise NoJob(NOT_A_JOB)
    verdict = screen.text_verdict(subject, title, job_text)
    if verdict is not None:
        raise NoJob(verdict.reason, verdict.kind)
    if not title:
        raise NoJob(
            "the message names no job title: put it in the subject (e.g. 'Senior Data Engineer"
            " — Lisbon') or a line 'Role: …'",
            "incomplete",
        )
    currency = _first_label(all_lines, _CURRENCY_LABEL)
    salary = jobpost.find_salary(all_lines, subject)
    if currency and salary is not None:
        salary = Salary(salary.min_ks, salary.max_ks, currency.upper(), salary.period)

    hints: list[str] = []
    label = _first_label(all_lines, _LOCATION_LABEL)
    if label:
        hints.append(label[:MAX_PLACE_HINT])
    for candidate in subjects:
        hints.append(_PREFIX.sub("", candidate)[:MAX_PLACE_HINT])
    company = _first_label(all_lines, _COMPANY_LABEL)
    from_sender = sender_company(senders)
    work_mode = find_work_mode("\n".join([*subjects, description[:20_000]]))
    links = [link for h in parts.html for link in html_links(h)] + text_links(description)
    # Where a reply would go (Reply-To, else From): the application address when the text
    # invites a reply, never where shortlist itself answers (shortlist.listings.mail.reply).
    replies_to = None if _is_automatic(msg) else next((a for _d, a in reply_to if a), None)
    return Reading(
        title=title,
        description=description,
        subject=subject[:MAX_TITLE],
        company=company[:200] if company else None,
        sender_company=from_sender,
        place_hints=hints[:5],
        text_head=description[:2000],
        work_mode=work_mode,
        salary=salary,
        signals=signals,
        message_id=message_id,
        automatic=_is_automatic(msg),
        addresses=sorted({a.lower() for _d, a in [*senders, *reply_to] if a}),
        language=language,
        apply_url=apply_link(links),
        apply_email=apply_address(description, links, replies_to),
    )
