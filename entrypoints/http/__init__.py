"""The public HTTP API: the FastAPI app, its routes and its edges."""
