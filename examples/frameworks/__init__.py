"""Agent frameworks with callgate under them: the OpenAI Agents SDK and LangGraph."""
