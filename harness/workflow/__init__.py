"""The five-step workflow: a LangGraph StateGraph with human gates (`graph`), where LangGraph
keeps its resume state (`checkpointer`), and the operations the CLI calls (`runs`). The run
record it writes is `harness.record`."""
