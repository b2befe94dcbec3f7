"""The `club` command: arguments in, a role or an operator's command out."""
