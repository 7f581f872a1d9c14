"""POST /v1/responses (the OpenAI Responses API) on top of the chat service: same auth, limits,
server-side salt, schema guard, tool calling and errors; request and response shapes translated here."""
