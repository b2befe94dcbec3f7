"""The public API's routes, a module per resource."""
