"""The HTTP API's routes, one module per resource; `entrypoints/http.py` mounts them."""
