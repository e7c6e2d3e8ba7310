"""Alias of the seed's `verdict.prompt`: prompts live in `verdict.graph.prompt`."""

from verdict.graph.prompt import Prompt, PromptRegistry

__all__ = ["Prompt", "PromptRegistry"]
