"""The `turnscope` command line."""
