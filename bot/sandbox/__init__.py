"""The embedded default: stand-ins for the Kubernetes API and Slack, and the demo console."""
