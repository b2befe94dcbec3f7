"""Use cases over the domain, and the published language of Club's events."""
