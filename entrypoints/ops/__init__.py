"""The operator's console: `club status|trace|dlq|audit`, the /ops routes and page."""
