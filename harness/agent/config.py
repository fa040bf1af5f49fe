"""Which endpoint and model the agent uses, and its budgets: resolved once, when a run starts.

Precedence per setting: the command-line option, then the environment (`OPENAI_BASE_URL`,
`HARNESS_LLM_MODEL`), then the runbook's `agent:` section. The API key is only ever read from
the environment (`OPENAI_API_KEY`, or the variable the runbook's `agent.api_key_env` names)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from harness.errors import HarnessError
from harness.evidence.runbook import AgentSpec
from harness.record.models import AgentSettings

BASE_URL_ENV = "OPENAI_BASE_URL"
MODEL_ENV = "HARNESS_LLM_MODEL"
NOT_CONFIGURED = "no LLM endpoint configured"


def resolve_settings(base_url: str | None, model: str | None, spec: AgentSpec | None,
                     env: Mapping[str, str] = os.environ) -> AgentSettings | None:
    """The run's agent settings, or None when no model is named anywhere (every step then still
    runs its deterministic work; drafts say `not run: no LLM endpoint configured`).
    HarnessError (one line) for a base URL without a model."""
    spec = spec or AgentSpec()
    sources = []
    url = base_url or env.get(BASE_URL_ENV) or spec.base_url
    name = model or env.get(MODEL_ENV) or spec.model
    for value, option, variable, key in ((url, base_url, BASE_URL_ENV, "base_url"), (name, model, MODEL_ENV, "model")):
        if value is None:
            continue
        sources.append(f"--llm-{key.replace('_', '-')}" if option else variable if env.get(variable) else f"runbook agent.{key}")
    if name is None:
        if url is not None:
            raise HarnessError(f"an LLM endpoint ({url}, from {sources[0]}) needs a model: give --llm-model, set "
                               f"{MODEL_ENV}, or set agent.model in the runbook")
        return None
    return AgentSettings(base_url=url.rstrip("/") if url else None, model=name, source=", ".join(sources),
                         **spec.model_dump(exclude={"base_url", "model"}))


def describe(settings: AgentSettings | None) -> str:
    """One line for `harness run`: which endpoint and model the drafts use."""
    if settings is None:
        return (f"LLM: {NOT_CONFIGURED} (set {BASE_URL_ENV} and {MODEL_ENV}, or --llm-base-url/--llm-model); "
                "drafts will say not run")
    where = settings.base_url or "the openai client's default endpoint (api.openai.com)"
    return (f"LLM: model {settings.model} at {where} (from {settings.source}); budgets per step: "
            f"{settings.max_turns} turns, {settings.max_tokens} tokens, {settings.max_wall_s:g} s")
