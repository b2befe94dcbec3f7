"""Adapters of Club's external providers (e-mail: HTTP and SMTP)."""
