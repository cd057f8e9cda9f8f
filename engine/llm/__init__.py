"""The one LLM: the client that talks to OpenAI, Anthropic or an OpenAI-compatible server
(`client`, for graph extraction and summaries alike), and the daily budget they share
(`budget`, light: no LLM library is loaded to count or check it).
"""
