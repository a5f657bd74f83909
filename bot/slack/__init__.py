"""The Slack edge: the only package (besides the sandbox) importing slack_bolt / slack_sdk."""
