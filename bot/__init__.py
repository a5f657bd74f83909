"""gpunode: chat-ops for Kubernetes GPU-node memory incidents."""

__version__ = "0.1.0"
