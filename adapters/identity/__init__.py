"""Identity: bearer tokens verified, and signed for development."""
