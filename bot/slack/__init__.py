"""The Slack surface: translates Slack to and from the use cases of ``bot.services``.

- ``edge``: the signed HTTP request check on the raw bytes (before Bolt parses anything);
- ``payloads``: pydantic models of what Slack sends (validated before use);
- ``app``: the slash command and the thread events; ``interactions``: the buttons and the
  confirmation modal (neither imports the other); ``bolt``: the Bolt app with both;
- ``chatting``: ``SlackChat``, the ``ChatPort`` over the Web API; ``blockkit``: Block Kit
  checks.

No use case lives here (role checks, exports, thread handling are in ``bot.services``).
With ``bot.wiring`` (which builds the app and the Socket Mode handler) and the sandbox, the
only code importing ``slack_bolt``/``slack_sdk``.
"""
