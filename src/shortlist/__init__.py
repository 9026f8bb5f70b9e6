"""shortlist: semantic search for jobs and talent on PostgreSQL + pgvector."""

__version__ = "0.1.0"
