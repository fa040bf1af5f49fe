"""Evidence runners: runbook, served model, smoke, accuracy, performance, traces, fallback scan."""
