"""What every process reads first: settings, the catalogue of roles, logging."""
