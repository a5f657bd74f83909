"""The Kubernetes edge: the only package that imports ``kubernetes``.

The sync client runs in ``asyncio.to_thread``; every client exception becomes a
``bot.errors.KubeError`` here and nowhere else.
"""
