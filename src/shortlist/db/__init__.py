"""Database plumbing: the embedded server, connection pools, migrations and named SQL."""
