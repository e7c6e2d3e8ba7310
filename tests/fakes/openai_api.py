"""Re-export: the fake OpenAI server lives in `verdict_demo.fake_llm.openai_api`."""

from verdict_demo.fake_llm.openai_api import FakeOpenAI, embedding_vector

__all__ = ["FakeOpenAI", "embedding_vector"]
