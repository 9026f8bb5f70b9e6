"""Every channel the code notifies on is named in shortlist.db.channels."""

from __future__ import annotations

from shortlist.db.migrate import available_migrations


def test_every_notified_channel_is_named_in_db_channels() -> None:
    import re

    from shortlist.db import channels

    notified = {
        name
        for m in available_migrations()
        for name in re.findall(r"pg_notify\('([a-z_]+)'", m.sql)
    }
    assert notified == set(channels.ALL)
