"""The fake LLM servers for tests: re-exported from `verdict_demo.fake_llm` (bundled there because
`make demo` uses them too). Scripting, behaviours and recording are documented in that package."""

from verdict_demo.fake_llm import (
    Behaviour,
    Fail,
    FakeAnthropic,
    FakeOpenAI,
    FakeServer,
    Malformed,
    RecordedRequest,
    Reply,
    TokenLogprob,
    ToolCall,
)

__all__ = [
    "Behaviour", "FakeAnthropic", "FakeOpenAI", "FakeServer", "Fail", "Malformed", "RecordedRequest",
    "Reply", "TokenLogprob", "ToolCall",
]
