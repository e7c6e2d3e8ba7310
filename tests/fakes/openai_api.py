"""Re-export: the fake OpenAI server lives in `verdict_daemon.fake_llm.openai_api`."""

from verdict_daemon.fake_llm.openai_api import FakeOpenAI, embedding_vector

__all__ = ["FakeOpenAI", "embedding_vector"]
