"""Type aliases for connections and pools: every connection returns rows as dicts."""

from __future__ import annotations

from typing import Any, TypeAlias

from psycopg import AsyncConnection, Connection
from psycopg_pool import AsyncConnectionPool

Row: TypeAlias = dict[str, Any]
AsyncConn: TypeAlias = AsyncConnection[Row]
SyncConn: TypeAlias = Connection[Row]
AsyncPool: TypeAlias = AsyncConnectionPool[AsyncConn]
