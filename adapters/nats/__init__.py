"""NATS JetStream: streams, the outbox relay, the consumer runner, dead letters."""
