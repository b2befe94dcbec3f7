"""Private PostgreSQL and NATS servers from PyPI wheels, for a machine with none."""
