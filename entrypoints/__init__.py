"""How Club is started: HTTP, command line, and the one composition root."""
