"""Sandbox providers: small services that play Club's external providers, with knobs
that make them misbehave on purpose."""
