"""The five-step workflow: a LangGraph StateGraph with human gates (`graph`), its checkpointed
state (`state`, `checkpointer`), the run workspace layout (`layout`), approval hashing
(`hashing`), feature naming (`features`) and the operations the CLI calls (`runs`)."""
