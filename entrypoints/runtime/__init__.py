"""Process wiring: the composition root, the roles, their supervisor and metrics."""
