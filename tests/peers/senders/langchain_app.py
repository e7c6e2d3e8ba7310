"""The scenario's two questions through a LangChain chain or a LangGraph graph, under OpenInference's or
OpenLLMetry's LangChain instrumentation, alone or together with the same suite's OpenAI instrumentation
(the Phoenix quick-start and Traceloop's default set-up): what a LangChain app team runs.

usage: langchain_app.py chain|stream|graph|agent|agent-two-tools openinference|openllmetry [with-openai]

chain: `ChatPromptTemplate | ChatOpenAI | StrOutputParser` invoked once per question (prompt, model and
parser steps under one chain span); stream: the same chain consumed with `.stream()` (the model streams). graph: a LangGraph StateGraph with two nodes, `draft` (calls the
model) and `review` (plain Python), compiled and invoked once per question (graph, node and model spans).
agent: a LangGraph tool-calling agent, the scenario's tool bound to the model: an `agent` node (the model) and a
`tools` node (langgraph.prebuilt's ToolNode) looping until the model answers (the tool scenario: per question a
tool call, the tool, the answer). agent-two-tools: the same agent with the scenario's second tool bound too (the
two-tool scenario: per question a call of each tool in turn, then the answer).
"""

from __future__ import annotations

import os
import sys
from typing import TypedDict

import _peer


def instrument(suite: str, with_openai: bool, tracer_provider) -> dict[str, str]:
    if suite == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=tracer_provider)
        packages = _peer.versions("openinference-instrumentation-langchain")
        if with_openai:
            from openinference.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
            packages |= _peer.versions("openinference-instrumentation-openai")
        return packages
    if suite == "openllmetry":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=tracer_provider)
        packages = _peer.versions("opentelemetry-instrumentation-langchain")
        if with_openai:
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
            packages |= _peer.versions("opentelemetry-instrumentation-openai")
        return packages
    raise SystemExit(f"unknown suite {suite!r}")


def model(stream_usage: bool = False):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=_peer.MODEL, base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer",
                      max_retries=0, stream_usage=stream_usage)


def run_chain(stream: bool) -> list[str]:
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate

    prompt = ChatPromptTemplate.from_messages([("system", _peer.SYSTEM), ("user", "{question}")])
    chain = prompt | model(stream_usage=stream) | StrOutputParser()  # a stream reports usage when asked
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            if stream:
                "".join(chain.stream({"question": question}))
            else:
                chain.invoke({"question": question})
        calls.append(f"(prompt | ChatOpenAI(model={_peer.MODEL}) | StrOutputParser()).{'stream' if stream else 'invoke'}")
    return calls


class State(TypedDict, total=False):
    question: str
    draft: str
    answer: str


def run_graph() -> list[str]:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langgraph.graph import END, START, StateGraph

    llm = model()

    def draft(state: State) -> State:
        reply = llm.invoke([SystemMessage(_peer.SYSTEM), HumanMessage(state["question"])])
        return {"draft": str(reply.content)}

    def review(state: State) -> State:  # no model call: a graph step only
        return {"answer": state["draft"].strip()}

    graph = StateGraph(State)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", END)
    app = graph.compile()
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            app.invoke({"question": question})
        calls.append(f"StateGraph(draft -> review).invoke: ChatOpenAI(model={_peer.MODEL}) in draft")
    return calls


def run_agent(two_tools: bool) -> list[str]:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    tools = [tool(_peer.lookup_charge), *([tool(_peer.refund_charge)] if two_tools else [])]
    llm = model().bind_tools(tools)

    def agent(state: MessagesState) -> dict:
        return {"messages": [llm.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile()
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            app.invoke({"messages": [SystemMessage(_peer.SYSTEM), HumanMessage(question)]})
        names = ", ".join(t.name for t in tools)
        calls.append(f"StateGraph(agent <-> tools).invoke: ChatOpenAI(model={_peer.MODEL}).bind_tools([{names}])")
    return calls


def main() -> None:
    shape, suite = sys.argv[1], sys.argv[2]
    with_openai = sys.argv[3:] == ["with-openai"]
    tp = _peer.tracer_provider()
    packages = instrument(suite, with_openai, tp)
    packages |= _peer.versions("langchain-core", "langchain-openai", "langgraph", "openai", "opentelemetry-sdk")
    calls = run_graph() if shape == "graph" else run_agent(shape == "agent-two-tools") if shape.startswith("agent") \
        else run_chain(stream=shape == "stream")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
