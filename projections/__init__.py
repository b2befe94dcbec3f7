"""Read models built from published events; the consumer runner commits them."""
