"""Agent loops over callgate with the reference loop (`gateway.loop`): `offline` replays recorded
responses (no API key); `openai_responses` and `anthropic_messages` plug in the official SDKs."""
