"""The porting agent: a small tool-calling loop over any OpenAI-compatible endpoint (`loop`),
working in a sandboxed git worktree of the plugin (`sandbox`) through a few named tools
(`tools`), starting from a targeted context (`context`), configured once per run (`config`)."""
