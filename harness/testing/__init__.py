"""Test engines: stand-ins for what is not here, spoken to over their real protocols on
loopback. `loopback` is an SGLang-shaped server with injectable faults (python -m
harness.testing.loopback). Nothing in the product imports this package."""
