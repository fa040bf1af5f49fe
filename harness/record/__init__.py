"""The run record: what a run was given (run.json), what happened (the journal: step records and
gate decisions), where its files live, the processes its steps run (`processes`), how evidence
is hashed and upstreams pinned, and the verdict vocabulary (`checks`). Everything above reads
runs through these types."""
