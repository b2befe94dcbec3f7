"""Drivers and I/O: PostgreSQL, NATS JetStream, embedded servers, providers."""
