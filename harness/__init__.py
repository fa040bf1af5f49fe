"""harness: port upstream SGLang features into an out-of-tree plugin, with evidence."""

__version__ = "0.1.0"
