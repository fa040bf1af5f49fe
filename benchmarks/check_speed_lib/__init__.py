"""The code of benchmarks/check_speed.py (run that script; its docstring says what each module does)."""
