"""Prompt classes: `class MyPrompt(Prompt): \"\"\"template\"\"\"` registers MyPrompt in PromptRegistry."""

from __future__ import annotations

import threading
from typing import ClassVar

from verdict.graph.errors import ConfigurationError
from verdict.graph.template import CompiledTemplate, compile_template


class PromptRegistry:
    """Prompt classes by name, so configuration can refer to a prompt by its class name."""

    _prompts: ClassVar[dict[str, type[Prompt]]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def register(cls, prompt: type[Prompt]) -> None:
        with cls._lock:
            cls._prompts[prompt.__name__] = prompt

    @classmethod
    def get(cls, name: str) -> type[Prompt]:
        try:
            return cls._prompts[name]
        except KeyError:
            raise ConfigurationError(f"no prompt named {name!r} is registered "
                                     f"(known: {', '.join(sorted(cls._prompts)) or 'none'})") from None

    @classmethod
    def names(cls) -> list[str]:
        return sorted(cls._prompts)


class Prompt:
    """A named prompt template: the subclass's docstring is the template."""

    template: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__doc__:
            cls.template = cls.__doc__
        if not cls.template.strip():
            raise ConfigurationError(f"prompt {cls.__name__} has an empty template (write it as the docstring)")
        cls.compiled = compile_template(cls.template)
        PromptRegistry.register(cls)

    compiled: ClassVar[CompiledTemplate]


def as_template(prompt: str | type[Prompt] | CompiledTemplate) -> CompiledTemplate:
    if isinstance(prompt, CompiledTemplate):
        return prompt
    if isinstance(prompt, type) and issubclass(prompt, Prompt):
        return prompt.compiled
    if isinstance(prompt, str):
        return compile_template(prompt)
    raise ConfigurationError(f"a prompt is a template string or a Prompt subclass, not {type(prompt).__name__}")
