"""The published language: what other programs may rely on, versioned."""
