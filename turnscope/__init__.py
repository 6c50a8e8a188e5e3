"""turnscope: test voice agents the way their callers meet them."""

__version__ = "0.1.0"
